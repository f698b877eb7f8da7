from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import TemplateView

from judging import pool_urls as judged_pool_urls
from pooling import urls as pooling_urls

# The pages under /pooling/ come from two apps: pooling's own, and those that read judgment
# sets as well (judging reads pools, never the reverse). One namespace, "pooling", for both;
# pooling's first, so "pools/build/" is not read as a pool named "build".
POOLING_PAGES = (pooling_urls.urlpatterns + judged_pool_urls.urlpatterns, "pooling")

urlpatterns = [
    path("", TemplateView.as_view(template_name="home.html"), name="home"),
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("crowd/", include("topics.urls")),
    path("crowd/", include("crowd.urls")),
    path("crowd/", include("projects.urls")),
    path("retrieval/", include("retrieval.urls")),
    path("pooling/", include(POOLING_PAGES)),
    path("judging/", include("judging.urls")),
    path("evaluation/", include("evaluation.urls")),
    path("api/", include("config.api")),
]
