from django.urls import path

app_name = "crowd"

urlpatterns: list = []
