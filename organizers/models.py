from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class Organizer(models.Model):
    """A company or person that runs events and sells their tickets."""

    class EmailLanguage(models.TextChoices):
        """What the emails to ticket holders are written in (CONTRACT §14)."""

        THAI_ENGLISH = "th+en", _("Thai, with English below")
        THAI = "th", _("Thai")
        ENGLISH = "en", _("English")

    name = models.CharField(max_length=200, verbose_name=_("name"))
    slug = models.SlugField(max_length=80, unique=True, verbose_name=_("slug"))
    description = models.TextField(blank=True, verbose_name=_("description"))
    avatar = models.ImageField(
        upload_to="organizers/", blank=True, null=True, verbose_name=_("avatar")
    )
    avatar_resized = models.ImageField(
        upload_to="organizers/resized/", blank=True, null=True, verbose_name=_("avatar resized")
    )
    email_language = models.CharField(
        max_length=8,
        choices=EmailLanguage.choices,
        default=EmailLanguage.THAI_ENGLISH,
        help_text=_("The language of the ticket emails sent to holders."),
        verbose_name=_("email language"),
    )
    # Shown to holders on the ticket page, the PDF and the email, whose replies go to it.
    contact_email = models.EmailField(
        blank=True,
        help_text=_("Where ticket holders write to; replies to ticket emails go here."),
        verbose_name=_("contact email"),
    )
    contact_phone = models.CharField(
        max_length=32,
        blank=True,
        help_text=_("A phone number for ticket holders, as written."),
        verbose_name=_("contact phone"),
    )
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        through="Membership",
        related_name="organizers",
        verbose_name=_("members"),
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("organizer")
        verbose_name_plural = _("organizers")
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    """A user's role in an organizer; the API and the admin both check it on every request."""

    class Role(models.TextChoices):
        OWNER = "owner", _("Owner")
        ADMIN = "admin", _("Admin")
        STAFF = "staff", _("Staff")

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="memberships",
        verbose_name=_("user"),
    )
    organizer = models.ForeignKey(
        Organizer, on_delete=models.CASCADE, related_name="memberships", verbose_name=_("organizer")
    )
    role = models.CharField(
        max_length=16, choices=Role.choices, default=Role.STAFF, verbose_name=_("role")
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("membership")
        verbose_name_plural = _("memberships")
        constraints = [
            models.UniqueConstraint(fields=["user", "organizer"], name="membership_unique_user_org")
        ]

    def __str__(self) -> str:
        return f"{self.user} — {self.organizer} ({self.get_role_display()})"
