"""PKCE policy (CONTRACT §4), importable from settings: models load only when it is called."""


def pkce_required(client_id: str) -> bool:
    """Public clients cannot keep a secret, so they must prove the code is theirs with PKCE.

    Confidential clients may still send it; existing integrations send none.
    """
    from oauth2_provider.models import get_application_model

    Application = get_application_model()
    client_type = (
        Application.objects.filter(client_id=client_id)
        .values_list("client_type", flat=True)
        .first()
    )
    return client_type != Application.CLIENT_CONFIDENTIAL
