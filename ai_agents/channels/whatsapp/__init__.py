"""WhatsApp Cloud API: adapter.py (webhook batches in, replies out through the 24-hour
window), graph.py (the Graph API client), payload.py (webhook parsing, signature), views.py and
urls.py (/webhooks/whatsapp)."""
