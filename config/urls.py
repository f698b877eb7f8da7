from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import TemplateView

urlpatterns = [
    path("", TemplateView.as_view(template_name="home.html"), name="home"),
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("crowd/", include("topics.urls")),
    path("crowd/", include("crowd.urls")),
    path("crowd/", include("projects.urls")),
    path("retrieval/", include("retrieval.urls")),
    path("pooling/", include("pooling.urls")),
    path("judging/", include("judging.urls")),
    path("evaluation/", include("evaluation.urls")),
    path("api/", include("config.api")),
]
