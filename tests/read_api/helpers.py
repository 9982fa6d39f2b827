"""Helpers of the read API tests: ids of a list answer, timestamps `auto_now` would overwrite."""


def set_times(model, pk, **times):
    """`auto_now` fields can only be set by an UPDATE that bypasses `save()`."""
    model.objects.filter(pk=pk).update(**times)


def ids(response, key="tickets"):
    assert response.status_code == 200, response.content
    return [item["id"] for item in response.json()[key]]
