from django.contrib.auth.models import AbstractUser
from django.db import models
from django.db.models.functions import Lower
from django.utils.translation import gettext_lazy as _


class User(AbstractUser):
    """A person: buyer, ticket holder, organizer staff or operator."""

    class Gender(models.TextChoices):
        FEMALE = "female", _("Female")
        MALE = "male", _("Male")
        OTHER = "other", _("Other")

    first_name = None
    last_name = None

    full_name = models.CharField(max_length=200, blank=True, verbose_name=_("full name"))
    email = models.EmailField(blank=True, verbose_name=_("email"))
    avatar = models.ImageField(
        upload_to="avatars/", blank=True, null=True, verbose_name=_("avatar")
    )
    avatar_resized = models.ImageField(
        upload_to="avatars/resized/", blank=True, null=True, verbose_name=_("avatar resized")
    )
    birthday = models.DateField(blank=True, null=True, verbose_name=_("birthday"))
    gender = models.CharField(
        max_length=16, choices=Gender.choices, blank=True, verbose_name=_("gender")
    )
    phone = models.CharField(
        max_length=32, blank=True, help_text=_("E.164, e.g. +66812345678"), verbose_name=_("phone")
    )

    REQUIRED_FIELDS = ["email"]

    class Meta:
        verbose_name = _("user")
        verbose_name_plural = _("users")
        indexes = [models.Index(Lower("email"), name="user_email_lower_idx")]

    def __str__(self) -> str:
        return self.full_name or self.username

    def get_full_name(self) -> str:
        return self.full_name

    def get_short_name(self) -> str:
        return self.full_name.split(" ")[0] if self.full_name else self.username
