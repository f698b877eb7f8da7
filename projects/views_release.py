"""The organiser's release page: the topic set and everything built on it as one
``.tar.gz`` (the archive ``export_collection`` writes); staff only (``common.roles.PAGES``)."""
import shutil
import tempfile

from django import forms
from django.http import FileResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_http_methods

from projects.release import LICENCES, ReleaseError
from projects.services import release_archive
from topics.models import TopicSet


class ReleaseForm(forms.Form):
    licence = forms.ChoiceField(
        choices=[(k, f"{name} ({k})") for k, (name, _url) in LICENCES.items()],
        help_text="written into LICENSE.md, CITATION.cff and the datasheet (name and SPDX "
                  "id; the licence text is linked, not copied)")
    title = forms.CharField(required=False, max_length=300,
                            help_text="for the datasheet and CITATION.cff (default: the "
                                      "topic set's name)")
    authors = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}),
                              help_text="one author a line, for CITATION.cff")


def archive_response(build, *args, **kwargs) -> FileResponse:
    """``build(*args, folder, **kwargs)`` writes an archive into a temporary folder; the
    response streams it (the folder is gone already: the open file keeps the bytes)."""
    work = tempfile.mkdtemp(prefix="release-")
    try:
        path = build(*args, folder=work, **kwargs)
        fh = open(path, "rb")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return FileResponse(fh, as_attachment=True, filename=path.name,
                        content_type="application/gzip")


@require_http_methods(["GET", "POST"])
def release_download(request, pk):
    """GET: the form; POST: the release archive of the topic set."""
    topic_set = get_object_or_404(TopicSet, pk=pk)
    form = ReleaseForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        authors = [a.strip() for a in d["authors"].splitlines() if a.strip()] or None
        try:
            return archive_response(release_archive, topic_set.name, licence=d["licence"],
                                    title=d["title"].strip() or None, authors=authors)
        except (ReleaseError, ValueError) as exc:
            form.add_error(None, str(exc))
    return render(request, "projects/organiser_form.html", {
        "form": form, "title": f"Release {topic_set.name}"}, status=400 if form.errors else 200)
