"""The conversation page's WhatsApp window: the words of its countdown and of the template
picker that replaces the reply box once the 24-hour window closed (inbox_window.js)."""

from __future__ import annotations

from django.utils.translation import gettext as _

from ai_agents.rules.whatsapp_window import WINDOW_LEFT


def window_texts() -> dict[str, str]:
    return {
        "left": str(WINDOW_LEFT),  # the list's cards say the same (window_label)
        "closed": _("Ventana cerrada"),
        "closed_hint": _(
            "La ventana de 24 horas está cerrada: solo se pueden enviar plantillas aprobadas."
        ),
        "no_templates": _("No hay plantillas aprobadas: sincronícelas en la administración."),
        "loading": _("Cargando las plantillas…"),
        "load_failed": _(
            "No se pudo cargar la lista de plantillas. Pulse «Actualizar la lista» para "
            "intentarlo de nuevo."
        ),
        "reloaded": _("Lista actualizada."),
        "sent": _("Plantilla enviada."),
        "fill": _("Complete todas las variables de la plantilla."),
        "generic": _("Algo ha fallado."),
        "network": _("No se pudo contactar con el servidor."),
        "variable": _("Variable %(name)s"),
    }
