"""The staff inbox: escalated conversations, claim / reply / release / close (`/inbox/`)."""
