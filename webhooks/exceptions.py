from ticketing.api.exceptions import InvalidParameters, Unprocessable


class WebhookUrlRefused(InvalidParameters):
    """The URL is not one we send to: scheme, address, or no address at all (CONTRACT §13)."""

    def __init__(self, reason: str):
        super().__init__(f"The webhook URL is refused: {reason}", fields={"url": [reason]})
        self.reason = reason


class WebhookEndpointDisabled(Unprocessable):
    code = "webhook_endpoint_disabled"
    default_message = "The endpoint is disabled; enable it before redelivering to it."


class WebhookEndpointLimitReached(InvalidParameters):
    """The organizer has as many endpoints as it may (WEBHOOK_MAX_ENDPOINTS_PER_ORGANIZER)."""

    def __init__(self, limit: int):
        super().__init__(
            f"An organizer may register at most {limit} webhook endpoints; delete one first."
        )
