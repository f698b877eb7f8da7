from django.urls import path

app_name = "retrieval"

urlpatterns: list = []
