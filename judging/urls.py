app_name = "judging"

urlpatterns: list = []
