from .models import Upload


def upload_get(upload_id: int) -> Upload:
    try:
        return Upload.objects.get(pk=upload_id)
    except Upload.DoesNotExist:
        raise ValueError(f"no upload with id {upload_id}") from None


def upload_list():
    return Upload.objects.all()
