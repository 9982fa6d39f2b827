"""Keep the token cache true to the database (`oauth_setup.token_cache`).

Deleting a user or an application deletes its tokens, and each deletion arrives here as the
token's own `post_delete`. A change to a membership forgets its user's tokens, which forgets the
roles their copies keep (an organizer's deletion deletes its memberships, each arriving here).

Bulk `QuerySet.update()` sends no signal: whoever changes tokens, users, applications or
memberships that way must call `token_cache.forget*` too.
"""

from django.contrib.auth import get_user_model
from django.db.models.signals import post_delete, post_save, pre_save
from django.dispatch import receiver
from oauth2_provider.models import get_access_token_model, get_application_model

from organizers.models import Membership

from . import token_cache

AccessToken = get_access_token_model()


@receiver(post_delete, sender=AccessToken, dispatch_uid="token_cache_token_deleted")
def _token_deleted(sender, instance, **kwargs):
    token_cache.forget([instance.token_checksum])


@receiver(pre_save, sender=AccessToken, dispatch_uid="token_cache_token_changed")
def _token_changed(sender, instance, **kwargs):
    # DOT refreshes a token in place when rotation is off, which changes its checksum.
    if instance.pk is not None:
        token_cache.forget_tokens_of(pk=instance.pk)


@receiver(post_save, sender=get_user_model(), dispatch_uid="token_cache_user_saved")
def _user_saved(sender, instance, created, update_fields=None, **kwargs):
    # Logging in saves last_login only, which no cached token depends on.
    if not created and set(update_fields or ()) != {"last_login"}:
        token_cache.forget_tokens_of(user=instance)


@receiver(post_save, sender=get_application_model(), dispatch_uid="token_cache_app_saved")
def _application_saved(sender, instance, created, **kwargs):
    if not created:
        token_cache.forget_tokens_of(application=instance)


@receiver(pre_save, sender=Membership, dispatch_uid="token_cache_membership_changed")
def _membership_changed(sender, instance, **kwargs):
    # The membership may move to another user, so its user before the change is forgotten too.
    # A new one replaces nothing: a copy keeps only the roles its user had.
    if instance.pk is not None:
        before = Membership.objects.filter(pk=instance.pk).values_list("user_id", flat=True)
        token_cache.forget_tokens_of(user_id__in=[instance.user_id, *before])


@receiver(post_delete, sender=Membership, dispatch_uid="token_cache_membership_deleted")
def _membership_deleted(sender, instance, **kwargs):
    token_cache.forget_tokens_of(user_id=instance.user_id)
