from ticketing.api.exceptions import InvalidParameters, Unprocessable


class WebhookUrlRefused(InvalidParameters):
    """The URL is not one we send to: scheme, address, or no address at all (CONTRACT §13)."""

    def __init__(self, reason: str):
        super().__init__(f"The webhook URL is refused: {reason}", fields={"url": [reason]})
        self.reason = reason


class WebhookEndpointDisabled(Unprocessable):
    code = "webhook_endpoint_disabled"
    default_message = "The endpoint is disabled; enable it before redelivering to it."
