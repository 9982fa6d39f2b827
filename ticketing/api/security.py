"""The OpenAPI security schemes a token can be presented by (`openapi.TokenAuthenticationScheme`
describes them), for the requirements the permission classes declare (`openapi_security`).

Kept apart from `openapi`, which imports DRF's views, which import the permission classes.
"""

USER_TOKEN = "userToken"
APPLICATION_TOKEN = "applicationToken"
BEARER = "bearerToken"
QUERY_TOKEN = "accessTokenQuery"

ANY_TOKEN = [{USER_TOKEN: []}, {APPLICATION_TOKEN: []}, {BEARER: []}, {QUERY_TOKEN: []}]
USER_PUBLIC = [{USER_TOKEN: ["public"]}, {BEARER: []}, {QUERY_TOKEN: []}]
