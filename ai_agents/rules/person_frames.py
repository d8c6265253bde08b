"""Generalised request frames of the phrase layer (`person_phrases`), on NORMALISED text: a
CONTACT VERB frame ("me podés conectar con", "¿me pasan con...?", "get ... on the line",
"schedule a call with", "reach your ... team", "have the ... contact me") followed by ANY
person-like object: an open class of role, profession or department nouns ("la nutrióloga",
"el técnico", "postventa", "compliance team", "whoever is in charge"), not only the fixed roles
of `person_lexicon.ROLE`. The negative contexts (`person_lexicon.BLOCKERS`) still apply.

- FRAMES: extra request patterns, checked after `person_lexicon.REQUESTS`;
- STRONG_FRAMES: asking for the very person who came or helped ("hablar con el técnico que
  vino ayer"), which the "talks about someone" context would otherwise cancel;
- `unquote(text)`: the ORIGINAL text without quoted words someone else said ("The delivery guy
  told me 'talk to the manager'"), so a quote is never read as the customer's request.
"""

from __future__ import annotations

import re

from ai_agents.rules.person_lexicon import _HELPED, _ROLE_EN, _SHORT_ROLE, ALONE, ROLE, _alt

_PROFESSION = _alt(
    "nutriolog[oa]|nutricionista|psicolog[oa]|dentista|odontolog[oa]|veterinari[oa]|",
    "enfermer[oa]|fisioterapeuta|terapeuta|instructor|instructora|entrenador|entrenadora|",
    "profesor|profesora|profe|maestr[oa]|tutor|tutora|coach|arquitect[oa]|disenador|disenadora|notari[oa]|gestor|",
    "gestora|contador|contadora|cocinero|cocinera|mesero|mesera|camarer[oa]|capitan|",
    "tecnico|tecnica|instalador|instaladora|mecanic[oa]|electricista|plomero|fontanero|",
    "vendedor|vendedora|asesor|asesora|consultor|consultora|analista|auditor|auditora|",
    "postventa|posventa|garantias|reclamos|quejas|devoluciones|compras|sistemas|tesoreria|",
    "credito|creditos|cobranzas|calidad|rrhh|legal|juridico|direccion|gerencia|mostrador|",
    "sucursal|administrador|administradora|titular|especialista|pediatra|cirujan[oa]|",
    "superior|superiores|jefe inmediato|jefa inmediata|propietari[oa]|servicio tecnico|",
    "soporte tecnico|area tecnica|mesa de ayuda|call center|centro de atencion|equipo|",
    "departamento|area|oficina|comercial",
)
_OBJ_ES = _alt(
    r"(?:(?:el|la|los|las|un|una|algun|alguna|su|sus|tu|tus|vuestro|vuestra) )?",
    rf"(?:{ROLE}|{_PROFESSION})\b|(?:alguien|alguno|alguna|personal|gente) (?:de|del|que)\b|",
    r"quien (?:lleve|lleva|maneja|maneje|atiende|atienda|vea|ve|revisa|revise|se encarga|",
    r"se encargue|este a cargo|esta a cargo|corresponda|pueda|sepa|decide|decida)\b",
)
_MODAL_ES = (
    r"(?:puedes|puede|pueden|podes|podrias|podria|podrian|podeis|podriais|quieres|quiere|"
    r"quieren|podras|podra)"
)
_LINK_ES = (
    r"(?:pasar|comunicar|conectar|contactar|transferir|derivar|canalizar|enlazar|"
    r"poner en contacto|poner)"
)
_NOT_PERSON = (
    r"(?!(?:el|la|los|las|un|una|mi|su) (?:pedido|orden|factura|pago|pagina|web|link|enlace|"
    r"cuenta|carrito|seccion|menu|app|aplicacion|tarjeta|compra|envio|paquete|caja|banco)\b)"
)
_OBJ_EN = _alt(
    r"(?:a |an |the |your |one of your |someone (?:in|from|on) |somebody (?:in|from|on) |",
    r"anyone (?:in|from|on) )",
    r"(?:\w+ ){0,3}",
    rf"(?:team|department|dept|desk|office|{_ROLE_EN}|advisors?|advisers?|experts?|",
    r"specialists?|managers?|chef|head chef|doctor|nurse|dentist|technician|engineer|",
    r"consultant|coordinator|planner|pharmacist|vet|trainer|instructor|therapist)\b",
)

FRAMES: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern)
    for pattern in (
        # "¿me podés conectar con alguien de postventa?", "¿me pasan con la nutrióloga?"
        rf"\bme {_MODAL_ES} {_LINK_ES} (?:con|a|al|ala) {_NOT_PERSON}{_OBJ_ES}",
        (
            r"\b(?:me (?:pasas|pasa|pasan|pases|pasen|comunicas|comunica|comunican|conectas|"
            r"conecta|conectan|transfieres|transfiere|transfieren|derivas|deriva|derivan)|"
            r"pasame|pasenme|paseme|comunicame|comuniqueme|comuniquenme|conectame|conecteme|"
            rf"conectenme|derivame|derivenme) (?:con|a|al) {_NOT_PERSON}{_OBJ_ES}"
        ),
        # "cómo hablo con un humano", "¿dónde me comunico con el encargado?"
        (
            r"\b(?:como|donde|por donde) (?:\w+ )?(?:hablo|me comunico|me contacto|contacto|"
            r"me pongo en contacto|localizo|llego|puedo hablar|puedo comunicarme|hago para hablar)"
            rf" (?:con|a|al) {_OBJ_ES}"
        ),
        # "hablar/comunicarme con el técnico", the want-frame with an open profession
        (
            r"\b(?:hablar|platicar|conversar|comunicarme|contactar|contactarme|tratar|"
            rf"ponerme en contacto|reunirme) (?:\w+ ){{0,4}}(?:con|a|al) {_OBJ_ES}"
        ),
        # "necesito que alguien de su equipo me contacte"
        (
            r"\bque (?:alguien|alguno|alguna|una persona|un humano|gente|personal|"
            rf"(?:el|la|un|una|algun|alguna|su) (?:{ROLE}|{_PROFESSION}))"
            r"(?: \w+){0,6} (?:me|nos) (?:llame|llamen|marque|marquen|contacte|contacten|"
            r"atienda|atiendan|hable|hablen|escriba|escriban|responda|respondan|busque|"
            r"busquen|devuelva la llamada|regrese la llamada|devuelvan|regresen|contestara|"
            r"llamara|contactara|escribiera|atendiera|explique|expliquen|explicara|explicaran|"
            r"ayude|ayuden|ayudara|asesore|asesoren|asesorara|oriente|orienten|revise|revisen)\b"
        ),
        r"\b(?:con|a) (?:quien|quienes|el|la) (?:que )?(?:este|esta|estan) a cargo\b",
        (
            r"\b(?:con|a) quien (?:hablo|me comunico|me dirijo|trato|me pongo en contacto|"
            r"llamo|le hablo|le escribo|contacto|acudo|puedo acudir|le marco)\b"
        ),
        r"\b(?:put|get) (?:me|us) in (?:touch|contact) with\b",
        # "prefiero arreglarlo con una persona": an infinitive with its object, then the person
        (
            r"\b(?:arreglar|resolver|ver|hablar|tratar|revisar|comentar|discutir|platicar|"
            r"aclarar|consultar|solucionar|checar|chequear|verificar|negociar|acordar)"
            rf"(?:lo|la|los|las|le|les) (?:\w+ )?con {_NOT_PERSON}{_OBJ_ES}"
        ),
        (
            r"\b(?:me|nos) (?:llama|marca|contacta|atiende|escribe|llamara|contactara|llamaria|"
            rf"marcaria|contactaria|atenderia|escribiria|hablaria) {_OBJ_ES}"
        ),
        # "dame el teléfono de alguien que sí", "give me the number of a manager"
        (
            r"\b(?:dame|denme|deme|pasame|pasenme|mandame|mandenme|quiero|necesito|ocupo) "
            r"(?:el |un )?(?:telefono|numero|contacto|whatsapp|correo|celular|extension|cel)"
            rf"(?: directo)? (?:de|del) {_OBJ_ES}|"
            r"\b(?:give me|send me|can i have|can i get|i need|i want) (?:the |a )?(?:direct )?"
            r"(?:number|phone number|contact|email|direct line|extension) (?:of|for) "
            r"(?:someone|somebody|a person|a human|a manager|the manager|an agent|a supervisor)\b"
        ),
        (
            r"\b(?:queja|reclamo|reclamacion|denuncia)(?: formal)? (?:con|ante) "
            rf"{_NOT_PERSON}{_OBJ_ES}|"
            r"\bcomplaint (?:with|to) (?:the|your) (?:\w+ )?(?:manager|supervisor|owner|boss|"
            r"director|person in charge)\b"
        ),
        (
            r"\b(?:asignarme|asignenme|asigneme|asignen|asignar|assign me|assign) (?:a |an )?"
            r"(?:un|una|a|an) (?:\w+ )?(?:asesor|asesora|ejecutivo|ejecutiva|agente|"
            r"representante|persona|advisor|agent|rep|representative|person|account manager)\b"
        ),
        (
            r"\b(?:pasen|pasa|pase|transfieran|transfiere|transfiera|transfer|put|pass) "
            r"(?:mi|la|esta|my|this|the) (?:llamada|call) (?:a|al|con|to|through)\b"
        ),
        (
            r"\b(?:someone|somebody|anyone|anybody|person|human|one) i (?:can|could|may|might) "
            r"(?:speak|talk|chat)\b"
        ),
        (
            r"\b(?:llamada|videollamada|cita telefonica|llamada telefonica|reunion telefonica|"
            rf"videoconferencia|reunion virtual|zoom)(?: \w+)? (?:con|de) {_OBJ_ES}"
        ),
        (
            r"\bcon (?:que|cual) (?:persona|area|departamento|asesor|agente|ejecutivo)"
            r"(?: \w+){0,3} (?:hablar|tratar|comunicarme|dirigirme|ver|hablo|trato|me comunico)\b|"
            r"\b(?:best|right|correct|appropriate) person (?:i can |to )?"
            r"(?:speak|talk|contact|call)"
        ),
        (
            r"\b(?:any|some) (?:humans?|real people|people|persons?|staff) (?:working|on duty|"
            r"at work|in today|awake|online now)\b"
        ),
        r"\bcan (?:they|he|she|them) (?:please )?(?:contact|call|phone|ring) (?:me|us)\b",
        # a clause that is nothing but the person asked for: "Por favor, un supervisor."
        rf"^(?:por favor |please |porfa )?(?:{ALONE.pattern})$",
        (
            r"\b(?:human|person|agent|someone|somebody|real person|staff member|rep) "
            r"(?:to )?take (?:over|this over|it over|my case)\b|"
            r"\bque (?:una persona|un humano|alguien|un asesor|un agente) (?:tome|se haga cargo|"
            r"lleve|siga) (?:mi caso|el caso|esta conversacion|la conversacion|esto)\b"
        ),
        # "que se pongan en contacto conmigo", "que un asesor se comunique conmigo"
        (
            r"\b(?:ponga|pongan|pusiera|pusieran|pongais|pongas) en contacto conmigo|"
            r"\b(?:comunique|comuniquen|comunicara|comunicaran|comuniqueis|contacte|contacten|"
            r"contactara|contactaran|contacteis|comuniquese|comuniquense) conmigo\b"
        ),
        (
            r"\b(?:quiero|necesito|exijo|pido|busco|ocupo|preciso) (?:a|al|a la) "
            rf"(?:(?:tu|su|sus|tus|vuestro|vuestra|el|la|un|una|algun|alguna) )?{_SHORT_ROLE}\b"
        ),
        (
            r"\b(?:contesten|atiendan|conteste|atienda|responda|respondan|hable|hablen) "
            r"(?:personas|una persona|humanos|un humano|gente real|personas reales|seres humanos)\b"
        ),
        (
            r"\bcon (?:quien|quienes|el que|la que) (?:pueda|pudiera|podamos|pudiese|podria) "
            r"(?:hablar|comunicarme|platicar|tratar|charlar|conversar)\b"
        ),
        (
            rf"\bque (?:alguien|el de|la de|los de|(?:un|una|el|la|algun|alguna|su) "
            rf"(?:{ROLE}|{_PROFESSION}))(?: \w+){{0,6}} (?:por telefono|por llamada|"
            r"por videollamada|al celular|al cel|en persona)\b"
        ),
        # "forward my case to a supervisor", "turnen mi caso a un asesor"
        (
            r"\b(?:forward|escalate|pass|send|refer|transfer|hand|move) (?:my|this|the|our) "
            r"(?:case|ticket|complaint|issue|request|claim|query|problem|file) (?:on |over )?"
            r"to (?:a|an|the|your|someone|somebody)\b|"
            r"\b(?:pase|pasen|turne|turnen|escale|escalen|derive|deriven|canalice|canalicen|"
            r"pasa|pasad|turna|escala|deriva) (?:mi|el|este|nuestro) (?:caso|reporte|ticket|"
            r"reclamo|queja|expediente|problema) (?:a|al|con)\b"
        ),
        (
            r"\b(?:need|want|like|prefer|request|get|have|book) (?:a |an )?(?:\w+ )?"
            r"(?:call|phone call|callback|call back|chat|meeting) (?:with|from)\b"
        ),
        (
            r"\b(?:handled|reviewed|looked at|dealt with|seen|checked|answered|read) by "
            r"(?:a |an )?(?:real |live |actual )?(?:human|person|agent|someone|somebody|"
            r"member of staff|manager|supervisor|staff member)\b|"
            r"\b(?:atendid[oa]|revisad[oa]|vist[oa]|resuelt[oa]|gestionad[oa]|leid[oa]) por "
            r"(?:una persona|un humano|un asesor|una asesora|alguien|un agente|personal|"
            r"un ser humano)\b"
        ),
        (
            r"\b(?:anyone|anybody|someone|somebody)(?: \w+){0,4} (?:available|free|around|"
            r"there|here) to (?:talk|speak|chat|help|call)\b"
        ),
        # "¿puede contactarme el gerente?", "¿me pueden llamar?"
        (
            r"\b(?:puede|pueden|podria|podrian|podrias|puedes|podes|podra|podran) "
            r"(?:contactarme|llamarme|marcarme|atenderme|hablarme|telefonearme|"
            r"comunicarse conmigo|ponerse en contacto conmigo|devolverme la llamada|"
            r"regresarme la llamada)\b"
        ),
        (
            r"\b(?:ayuda|atencion|asistencia|apoyo) (?:de|por parte de) (?:una persona|un humano|"
            r"un asesor|una asesora|un agente|alguien|una persona real|un ser humano|personal)\b|"
            r"\b(?:help|assistance|support) from (?:a |an )?(?:real |live |actual )?(?:human|"
            r"person|agent|rep|representative|someone|somebody|member of staff)\b"
        ),
        (
            r"\b(?:comentar|comentarlo|discutir|discutirlo|revisarlo|consultarlo|platicarlo|"
            rf"hablarlo|tratarlo|verlo|resolverlo) (?:\w+ )?con {_OBJ_ES}"
        ),
        (
            r"\b(?:discuss|go over|talk over|talk through|review|sort out|sort this out) "
            r"(?:\w+ ){0,3}with (?:one of your|your|a|an|the|someone|somebody)\b"
        ),
        r"\b(?:have|get) a (?:quick |brief |short )?word with\b",
        (
            r"^(?:i )?(?:need|want|wanna|gimme|get me) (?:a |an |the )?(?:real |live |actual )?"
            r"(?:human|person|agent|rep|representative|operator|manager|supervisor)\b"
        ),
        (
            r"\b(?:can|could|would|please|have|get|ask|tell|want|need|like) "
            rf"{_OBJ_EN}(?: \w+){{0,4}} (?:please )?(?:to )?(?:call|phone|ring|contact|get back to|"
            r"get in touch with|reach out to) (?:me|us)\b"
        ),
        (
            r"\b(?:love|like|want|wanna|need|prefer|hoping) to (?:chat|speak|talk|meet) "
            r"(?:\w+ )?(?:with|to) (?:one of your|your|a|an|the|someone|somebody)\b"
        ),
        # "schedule a call with one of your advisors"
        (
            r"\b(?:schedule|book|arrange|set up|setup|request|get|have|organize|organise) "
            r"(?:a |an )?(?:quick |short |phone |video |zoom )?(?:call|phone call|callback|"
            r"call back|chat|conversation|consultation|meeting) with\b"
        ),
        # "reach your compliance team", "contact the store manager", "get hold of billing"
        (
            r"\b(?:reach|contact|get in touch with|get hold of|get ahold of|get a hold of|"
            rf"speak with|speak to|talk to|talk with|message|email) {_OBJ_EN}"
        ),
        r"\b(?:get|put|have) (?:\w+ ){1,4}on the (?:line|phone)\b",
        (
            r"\b(?:with|to|speak|talk|reach|contact|see|get|find) (?:whoever|the person|"
            r"someone|somebody|the one|the people|anyone) (?:who is |who s |that is |thats |"
            r"is |who are |who re )?(?:in charge|responsible)\b"
        ),
        # "have the head chef contact me", "get someone from sales to call me"
        (
            r"\b(?:have|get|ask|tell|want|need|like|prefer) (?:the|your|a|an|one of your|someone|"
            r"somebody|anyone)(?: \w+){0,4} (?:to )?(?:call|phone|ring|contact|email|text|"
            r"reach|get back to|get in touch with) (?:me|us)\b"
        ),
    )
)

_SPEAK = (
    r"(?:hablar|platicar|conversar|comunicarme|contactar|tratar|ponerme en contacto|"
    r"me (?:pasas|pasa|pasan|comunicas|comunica|comunican)|pasame|comunicame|speak|talk|"
    r"reach|contact|get in touch)"
)
STRONG_FRAMES: tuple[re.Pattern[str], ...] = (
    re.compile(
        rf"\b{_SPEAK} (?:con|to|with|a) (?:el|la|the|al|a la) \w+(?: \w+)? (?:que|who|that) "
        rf"(?:me |nos |us |you |ya )?{_HELPED}\b"
    ),
)

# Negative contexts added to `person_lexicon.BLOCKERS` (same form: name, pattern on the clause
# padded with spaces).
BLOCKER_FRAMES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (  # "¿es necesario hacer cita para hablar con el doctor?": how things work, no request
        "procedure",
        re.compile(
            r" (?:es necesario|hace falta|se necesita|se requiere|hay que|necesito|ocupo|"
            r"tengo que) (?:hacer |sacar |pedir |agendar |tener )?(?:una )?cita para |"
            r" (?:do i|do you|does one|do we) need (?:an |a )?(?:appointment|booking|referral) "
            r"to | (?:cuanto cuesta|cuanto cobran|how much (?:is|does) it cost to) |"
            r" in person (?:at|in) (?:the|your|a) (?:store|shop|branch|clinic|office|pharmacy) |"
            r" en persona en (?:la|el|su|una) (?:tienda|sucursal|clinica|oficina|farmacia) |"
            r" (?:person|someone|somebody|adult|persona|alguien|un adulto|adulto) (?:\w+ )?"
            r"(?:to sign|para firmar|para recibir|to receive|to pick up|para recoger|to collect|"
            r"que firme|que reciba) "
        ),
    ),
    (  # "I love that a real person packs each order": praise of a fact
        "praise",
        re.compile(
            r" (?:love|like|appreciate|adore|enjoy) (?:that|how|when|the fact) |"
            r" (?:me encanta|me gusta|aprecio|valoro) (?:que|como|cuando) "
        ),
    ),
    (  # "I'm a real person, not a company"
        "self",
        re.compile(
            r" (?:im|i m|i am|we re|we are|soy|somos) (?:a |an |una |un )?(?:real |normal |"
            r"regular |private )?(?:person|people|human|individual|persona|personas) "
        ),
    ),
)

_QUOTE = re.compile(r"(?:(?<=\s)|(?<=:)|^)[\"“«'‘]([^\"”»'’\n]{2,160})[\"”»'’]")
_REPORTED = re.compile(
    r"\b(?:said|says|told|tells|wrote|writes|replied|answered|suggested|dijo|dice|dijeron|"
    r"decia|decian|puso|escribio|contesto|respondio|sugirio|comento|me dijo|recomendo)\b",
    re.IGNORECASE,
)


def unquote(text: str) -> str:
    """`text` without the quoted words a reporting verb ("told me", "dijo") introduces."""
    if not any(mark in text for mark in "\"“«'‘"):
        return text

    def drop(match: re.Match[str]) -> str:
        before = text[max(0, match.start() - 60) : match.start()]
        return " " if _REPORTED.search(before) else match.group(0)

    return _QUOTE.sub(drop, text)
