from django.urls import path

app_name = "pooling"

urlpatterns: list = []
