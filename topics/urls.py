from django.urls import path

from topics import views

app_name = "topics"

# Mounted under /crowd/ (config.urls), at the address the page has always had.
urlpatterns = [
    path("topic-sets/<int:pk>/", views.topic_set_detail, name="topic_set_detail"),
]
