"""``verify_manifest`` as the manifest tests call it."""
import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError


def verify(path) -> str:
    """What ``verify_manifest PATH`` prints when the output is reproduced."""
    out = io.StringIO()
    call_command("verify_manifest", str(path), stdout=out)
    return out.getvalue()


def fails(path) -> str:
    """The error ``verify_manifest PATH`` ends with when it is not."""
    with pytest.raises(CommandError) as info:
        call_command("verify_manifest", str(path), stdout=io.StringIO())
    return str(info.value)
