"""The team page: a tenant's owner or admin invites, re-roles and removes members by themself.

Mounted at / by erp.urls: `/team/` (the first team), `/team/<slug>/` (one tenant's team and its
forms) and `/password/set/<uid>/<token>/` (the invited person's one-time "choose a password").
"""
