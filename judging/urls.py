from django.urls import path

from judging import views

app_name = "judging"

urlpatterns = [
    # Assessors (signed-in accounts listed by the task).
    path("", views.index, name="index"),
    path("tasks/<str:name>/", views.judge, name="judge"),
    path("tasks/<str:name>/undo/", views.undo, name="undo"),
    # Organisers (staff).
    path("manage/", views.manage_list, name="manage_list"),
    path("manage/<str:name>/", views.manage_task, name="manage_task"),
    path("manage/<str:name>/collection/", views.manage_collection, name="manage_collection"),
    path("manage/<str:name>/publish/", views.manage_publish, name="manage_publish"),
    path("manage/<str:name>/stop/", views.manage_stop, name="manage_stop"),
    path("manage/<str:name>/resume/", views.manage_resume, name="manage_resume"),
    path("manage/<str:name>/export/<str:fmt>/", views.manage_export, name="manage_export"),
    path("manage/<str:name>/invites/", views.manage_invite_new, name="manage_invite_new"),
    path("manage/<str:name>/invites/<int:pk>/revoke/", views.manage_invite_revoke,
         name="manage_invite_revoke"),
    # Anyone with an invite link: an account (new, or signed in) becomes a task's assessor.
    path("invite/<str:token>/", views.invite, name="invite"),
    # Crowd workers: the public link of a published task, then pages held by a cookie.
    path("w/<str:slug>/", views.crowd_entry, name="crowd_entry"),
    path("w/<str:slug>/consent/", views.crowd_consent, name="crowd_consent"),
    path("w/<str:slug>/judge/", views.crowd_judge, name="crowd_judge"),
    path("w/<str:slug>/done/", views.crowd_done, name="crowd_done"),
]
