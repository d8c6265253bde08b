"""The web chat widget: visitor.py (bindings by public key, allowed origins, visitor sessions,
history, limits), views.py and urls.py (/widget.js, /api/webchat/{key}/sessions|messages,
/webchat/demo)."""
