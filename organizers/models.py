from django.conf import settings
from django.db import models


class Organizer(models.Model):
    """A company or person that runs events and sells their tickets."""

    class EmailLanguage(models.TextChoices):
        """What the emails to ticket holders are written in (CONTRACT §14)."""

        THAI_ENGLISH = "th+en", "Thai, with English below"
        THAI = "th", "Thai"
        ENGLISH = "en", "English"

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=80, unique=True)
    description = models.TextField(blank=True)
    avatar = models.ImageField(upload_to="organizers/", blank=True, null=True)
    avatar_resized = models.ImageField(upload_to="organizers/resized/", blank=True, null=True)
    email_language = models.CharField(
        max_length=8,
        choices=EmailLanguage.choices,
        default=EmailLanguage.THAI_ENGLISH,
        help_text="The language of the ticket emails sent to holders.",
    )
    # Shown to holders on the ticket page, the PDF and the email, whose replies go to it.
    contact_email = models.EmailField(
        blank=True, help_text="Where ticket holders write to; replies to ticket emails go here."
    )
    contact_phone = models.CharField(
        max_length=32, blank=True, help_text="A phone number for ticket holders, as written."
    )
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="organizers"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    """A user's role in an organizer; the API and the admin both check it on every request."""

    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        ADMIN = "admin", "Admin"
        STAFF = "staff", "Staff"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    organizer = models.ForeignKey(Organizer, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.STAFF)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "organizer"], name="membership_unique_user_org")
        ]

    def __str__(self) -> str:
        return f"{self.user} — {self.organizer} ({self.get_role_display()})"
