"""Template filters shared by every page's tables: numbers shown with a chosen precision."""
import math
from decimal import Decimal

from django import template

register = template.Library()


@register.filter
def num(value, digits=4):
    """A number for a table cell: integers as they are, reals to ``digits`` decimal places.

    ``None`` and NaN show as an en dash, so a missing value never reads as zero;
    anything that is not a number is returned unchanged.
    """
    if value is None or value == "":
        return "\u2013"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (float, Decimal)):
        if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
            return "\u2013" if math.isnan(value) else ("\u221e" if value > 0 else "\u2212\u221e")
        return f"{float(value):.{int(digits)}f}"
    return value


@register.filter
def web(message):
    """A service's message as a page says it (:func:`common.webmessages.web_message`)."""
    from common.webmessages import web_message

    return web_message(message)
