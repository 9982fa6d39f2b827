from django.contrib.auth.models import AbstractUser
from django.db import models
from django.db.models.functions import Lower


class User(AbstractUser):
    """A person: buyer, ticket holder, organizer staff or operator."""

    class Gender(models.TextChoices):
        FEMALE = "female", "Female"
        MALE = "male", "Male"
        OTHER = "other", "Other"

    first_name = None
    last_name = None

    full_name = models.CharField(max_length=200, blank=True)
    email = models.EmailField(blank=True)
    avatar = models.ImageField(upload_to="avatars/", blank=True, null=True)
    avatar_resized = models.ImageField(upload_to="avatars/resized/", blank=True, null=True)
    birthday = models.DateField(blank=True, null=True)
    gender = models.CharField(max_length=16, choices=Gender.choices, blank=True)
    phone = models.CharField(max_length=32, blank=True, help_text="E.164, e.g. +66812345678")

    REQUIRED_FIELDS = ["email"]

    class Meta:
        indexes = [models.Index(Lower("email"), name="user_email_lower_idx")]

    def __str__(self) -> str:
        return self.full_name or self.username

    def get_full_name(self) -> str:
        return self.full_name

    def get_short_name(self) -> str:
        return self.full_name.split(" ")[0] if self.full_name else self.username
