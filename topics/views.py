"""Pages of the topics app (staff): a topic set's topics."""
from django.shortcuts import get_object_or_404, render

from topics import selectors
from topics.models import TopicSet


def topic_set_detail(request, pk):
    """The topics of a set, a page at a time in natural order (``?after=<topic id>``)."""
    topic_set = get_object_or_404(TopicSet, pk=pk)
    after = request.GET.get("after") or None
    topics, next_after = selectors.topic_page(topic_set, after=after)
    return render(request, "topics/topic_set.html", {
        "topic_set": topic_set, "topics": topics, "after": after, "next_after": next_after,
    })
