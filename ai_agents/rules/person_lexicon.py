"""Word lists and patterns of the phrase layer (`person_phrases`), on NORMALISED text
(lower case, no accents, letters/digits only, single spaces; `text.normalize`).

- ROLE: who a customer may ask for: any person, a role, a department (Spanish and English);
- REQUESTS: asking to be put through, to speak with, to be attended or called back;
- STRONG: requests that carry their own negation ("que no sea un robot");
- ALONE: a message that is nothing but a person asked for ("Asesor", "un humano porfa");
- BLOCKERS: negative contexts, (name, pattern) checked on the clause padded with spaces;
- CUES / CUE_PREFIXES: words that make a message without a verdict worth layer 2;
- TYPOS: chat spellings and frequent typos, corrected word by word before matching.
"""

from __future__ import annotations

import re


def _alt(*parts: str) -> str:
    """A non-capturing group of "|"-separated alternatives (parts are concatenated)."""
    return "(?:" + "".join(parts) + ")"


def _words(*parts: str) -> tuple[str, ...]:
    return tuple("".join(parts).split())


_DET = (
    r"(?:(?:a |al |a la |con )?(?:un |una |el |la |los |las |algun |alguna |alguien |otro |"
    r"otra |tu |su |sus |tus |vuestro |vuestra |some |a |an |the |your |one of your |someone |"
    r"somebody )?)"
)
_ROLE_ES = _alt(
    "persona|humano|humana|ser humano|alguien|agente|asesor|asesora|ejecutivo|ejecutiva|",
    "operador|operadora|representante|encargado|encargada|gerente|supervisor|supervisora|jefe|",
    "jefa|dueno|duena|patron|patrona|responsable|doctor|doctora|dr|dra|medico|medica|",
    "licenciado|licenciada|lic|ingeniero|ingeniera|vendedor|vendedora|ventas|facturacion|",
    "cobranza|contabilidad|soporte|recepcion|administracion|atencion a clientes|",
    "atencion al cliente|servicio al cliente|servicio a clientes|personal|gente|companero|",
    "companera|especialista|tecnico|tecnica|director|directora|coordinador|coordinadora|",
    "secretaria|recepcionista|cajero|cajera|chef|abogado|abogada|senorita|senor|senora|chica|",
    "muchacha|joven|recursos humanos|el de|la de|los de|alguien de|area de|departamento de",
)
_ROLE_EN = _alt(
    "human|humans|person|people|someone|somebody|anyone|anybody|agent|rep|representative|",
    "manager|supervisor|owner|doctor|dr|nurse|sales|billing|accounts|accounting|support|",
    "customer service|customer support|staff|employee|operator|advisor|adviser|specialist|",
    "technician|boss|team|director|receptionist|dentist|lawyer|consultant|member of staff|",
    "team member|live agent|real person|live person|human being|persona|the office",
)
ROLE = _alt(_ROLE_ES, "|", _ROLE_EN)
_TARGET = rf"{_DET}{ROLE}\b"
_BOT = _alt(
    "bot|robot|maquina|contestadora|programa|ia|chatbot|asistente virtual|computadora|",
    "inteligencia artificial",
)
_TRANSFER_ES = _alt(
    "pasa me|pasame|pasenme|paseme|pasarme|me (?:pasas|pasa|pasan|pases|pasen|pasaria|",
    "pasarias|pasarian|podrias pasar|podria pasar|podrian pasar|puedes pasar|puede pasar|",
    "pueden pasar|quieres pasar|pasais|poneis|pones|pone|ponen)|ponme|ponganme|pongame|",
    "comunicame|comuniqueme|comuniquenme|comunicarme|me (?:comunicas|comunica|comunican|",
    "comuniques|comunique|comuniquen|puedes comunicar|puede comunicar|pueden comunicar|",
    "podria comunicar|podrias comunicar|podrian comunicar|podeis comunicar)|",
    "conectame|conecteme|conectenme|conectarme|",
    "me (?:conectas|conecta|conectan|conecten|puedes conectar|puede conectar)|transfiereme|",
    "transfierame|transfieranme|transferirme|me (?:transfieres|transfiere|transfieren|",
    "transfieran|puedes transferir|puede transferir)|derivame|derivenme|derivarme|",
    "me (?:derivas|deriva|derivan|deriven)|canalizame|canalicenme|canalizarme|",
    "me (?:canalizas|canaliza|canalizan|canalicen)|enlazame|enlazarme|me (?:enlazas|enlaza|",
    "enlazan)|pasa(?:me)? la llamada",
)
_CLITIC_TRANSFER = _alt(
    "pasame|pasenme|paseme|comunicame|comuniqueme|comuniquenme|conectame|conecteme|",
    "transfiereme|transfierame|transfieranme|derivame|canalizame|enlazame|ponme|ponganme",
)
_SPEAK_ES = _alt(
    "hablar|platicar|charlar|conversar|hablarle|tratar|comunicarme|contactar|contactarme|",
    "ponerme en contacto|chatear",
)
_WANT_ES = _alt(
    "quiero|quisiera|queria|necesito|necesitaria|ocupo|requiero|deseo|desearia|me gustaria|",
    "prefiero|preferiria|puedo|podria|se puede|se podria|podemos|pido|solicito|exijo|",
    "hay forma de|hay manera de|como puedo|donde puedo|dejame|dejeme|dejenme|tengo que|debo|",
    "vengo a|busco|preciso",
)
_CALLBACK_ES = _alt(
    "llamame|llamenme|llameme|marcame|marquenme|marqueme|hablame|hablenme|contactame|",
    "contactenme|contacteme|llamarme|marcarme|",
    "(?:regresar|devolver|regresarme|devolverme|regresen|devuelvan|regresenme|devuelvanme) ",
    "(?:me )?la llamada|",
    "me (?:pueden|puede|puedes|podrian|podria|podrias|podeis|podes) (?:llamar|marcar|hablar|",
    "telefonear|contactar|regresar la llamada|devolver la llamada|echar una llamada|",
    "dar una llamada)|",
    "me (?:regresan|devuelven|regresas|devuelves|regresa|devuelve|regresais|devolveis) ",
    "la llamada|",
    "me (?:llaman|marcan|llamas|marcas|llamais|hablan) (?:por favor|al|a este|a mi|hoy|manana|",
    "mas tarde|luego|cuando|en cuanto|ahora|ya|de vuelta|por telefono|al cel)|",
    "(?:quiero|necesito|solicito|pido|agendar|agendo|programar|dejo) (?:que me (?:llamen|",
    "marquen|llame|marque)|una llamada|una devolucion de llamada)",
)
_ATTEND_ES = _alt(
    "que me (?:atienda|atiendan|llame|llamen|marque|marquen|hable|hablen|contacte|contacten|",
    "responda|respondan|conteste|contesten|devuelva la llamada|devuelvan la llamada|",
    "regrese la llamada|regresen la llamada|busque|busquen|comuniquen|comunique|pasen|",
    "pase con|asesore|asesoren|llameis|marqueis|atendais|contacteis|hableis|paseis|",
    "llamara|llamaran|marcara|marcaran|atendiera|atendieran|",
    "contactara|contactaran|hablara|hablaran|respondiera|contestara)",
)
_WANT_EN = _alt(
    "want|wanna|would like|d like|need|can i|could i|may i|let me|i have to|i must|how do i|",
    "how can i|is it possible to|id like|im trying to|trying to|requesting|request|gotta|",
    "please|i demand to|i insist on|like to|prefer to|rather",
)
_CALLBACK_EN = _alt(
    "call me back|call me (?:please|asap|today|tomorrow|tonight|now|later|at|on|when|",
    "as soon|this|whenever|back)|please call me|",
    "(?:can|could) (?:you|someone|somebody|anyone|one of you) (?:please )?",
    "(?:call|phone|ring|contact) me|",
    "(?:have|get|ask|need|want) (?:someone|somebody|a person|an agent|a rep|a manager|",
    r"the manager|someone from \w+|a human|sales|billing|support) (?:to )?",
    "(?:call|phone|ring|contact|reach) me|give me a (?:call|ring)|",
    "(?:request|want|need|schedule|book|like) a (?:call ?back|phone call|call from)|",
    "callback|ring me|phone me",
)
_SHORT_ROLE = _alt(
    "humano|persona|asesor|asesora|agente|ejecutivo|ejecutiva|operador|operadora|",
    "representante|encargado|encargada|gerente|supervisor|supervisora|dueno|duena|",
    "responsable|jefe|jefa",
)
_EN_ROLE = _alt(
    "human|person|agent|rep|representative|manager|supervisor|operator|someone|somebody|",
    "human being",
)
_USTED = r"(?!usted|ustedes|ud\b|uds\b|vos\b|vosotros|ti\b|el bot|este bot|un bot)"
_YOU = r"(?!you\b|ya\b|it\b|this\b|the bot|a bot|an ai|chatgpt)"

REQUESTS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern)
    for pattern in (
        rf"\b{_TRANSFER_ES} (?:con|a|al|ala|para) {_TARGET}",
        rf"\b{_CLITIC_TRANSFER} (?:con|a|al) {_USTED}\w+",
        rf"\b{_SPEAK_ES} (?:directamente |ya |ahora |por favor )?con {_TARGET}",
        (
            rf"\b(?:{_WANT_ES}|me deja|me dejan|me dejas|me permite|me permiten|podrias|puedes|"
            r"pueden|puede) (?:\w+ )?(?:hablar|platicar|conversar|tratar|comunicarme|chatear) "
            rf"(?:\w+ )?con {_USTED}\w+"
        ),
        r"\bcon quien (?:puedo|podria|debo|tengo que|se puede) (?:hablar|comunicarme|tratar)",
        rf"\b{_ATTEND_ES}\b",
        rf"\b{_CALLBACK_ES}\b",
        rf"\b(?:me|nos) (?:atiende|atienda|puede atender|pueden atender|podria atender) {_TARGET}",
        (
            rf"\b(?:hay|habra|habria|existe|esta|estara|se encuentra|anda) {_TARGET} (?:ahi|alli|"
            r"por ahi|disponible|real|de verdad|que (?:me )?(?:atienda|conteste|responda|ayude|"
            r"pueda atender|hable|lea))"
        ),
        (
            r"\b(?:hay|habra) (?:alguien|alguna persona|algun humano|algun asesor|un humano|"
            r"una persona|personas reales|gente|algun ser humano)(?: \w+)? (?:ahi|alli|ahi que|"
            r"real|por ahi|atendiendo|despierto|disponible|de guardia|en linea|conectado|leyendo)"
        ),
        (
            r"\b(?:se encuentra|esta|estara|anda|estan|se encuentran) (?:el|la|los|las) "
            r"(?:encargado|encargada|gerente|dueno|duena|jefe|jefa|doctor|doctora|dr|dra|"
            r"supervisor|supervisora|licenciado|licenciada|responsable|patron|patrona|de ventas|"
            r"de facturacion)"
        ),
        (
            rf"\b{_WANT_ES} (?:que me atienda |ser atendid[oa] por |atencion de |a |al |a la )?"
            rf"(?:un|una|el|la|al|algun|alguna) {_SHORT_ROLE}\b(?! (?:para|que sepa|nuevo|nueva))"
        ),
        rf"\b(?:un|una|el|la) {_SHORT_ROLE} (?:por favor\b|please\b|urgente\b|ahora\b|ya$)",
        rf"\b(?:dame|denme|deme|consigueme|consiganme|mandame|mandenme) {_DET}{_SHORT_ROLE}\b",
        (
            r"\bque (?:alguien|una persona|un humano|un asesor|una asesora|un ejecutivo|"
            r"una ejecutiva|un agente|el encargado|la encargada|el gerente|la gerente|el dueno|"
            r"la duena|alguien de \w+) (?:me|nos) (?:llame|marque|atienda|contacte|hable|escriba|"
            r"responda|conteste|ayude|busque|devuelva la llamada|regrese la llamada)"
        ),
        r"\batencion (?:humana|personal|personalizada|de una persona|de un humano|de un asesor)",
        (
            r"\b(?:persona|humano|ser humano|alguien|gente) (?:real|de verdad|de carne y hueso|"
            r"verdadera|verdadero|de la empresa|del equipo|de la tienda|del negocio|de ventas|"
            r"de facturacion|de soporte|de cobranza|de sistemas)\b"
        ),
        (
            rf"\b{_WANT_EN} (?:to )?(?:speak|talk|chat|get in touch|get through|be connected) "
            rf"(?:directly |right now |now |please )?(?:to|with) {_YOU}\w+"
        ),
        (
            r"\b(?:speak|talk|chat) (?:to|with) (?:a |an |the |some |your |one of your )?"
            rf"(?:real |live |actual |human )?{_ROLE_EN}\b"
        ),
        (
            r"\b(?:transfer|connect|put|patch|forward|pass|route|send|redirect) me "
            r"(?:through |over |on )?(?:to|with)\b"
        ),
        r"\bput me through\b",
        r"\b(?:be|get|getting|being) (?:transferred|connected|put through|passed|redirected) to\b",
        (
            r"\b(?:any|anybody|anyone|a|some) (?:humans?|real people|real persons?|people|"
            r"persons?) (?:here|there|around|out there|online|available)\b"
        ),
        r"\bhand me (?:over|off)\b",
        r"(?<!will )(?<!would )(?<!did )(?<!they )\bescalate (?:this|my|me|it|the)\b",
        (
            r"\b(?:get|give|find|fetch|bring) me (?:a |an |the |your |some )?"
            rf"(?:real |live |actual )?{_ROLE_EN}\b"
        ),
        (
            r"\b(?:i want|i need|i d like|id like|i would like|i demand|i request|can i get|"
            r"can i have|could i get|may i have) (?:a |an |the |your )?(?:real |live |actual |"
            rf"human )?{_EN_ROLE}\b(?! (?:for|to (?:help|take care)|who knows))"
        ),
        (
            r"\b(?:is|are) (?:there )?(?:a |an )?(?:real |live |actual )?(?:human|person|people|"
            r"anyone|anybody|someone|somebody|humans) (?:there|here|around|available|"
            r"on (?:the )?(?:line|other end|chat)|i can (?:talk|speak|chat)|"
            r"who can (?:help|answer|talk)|reading)"
        ),
        (
            r"\bis (?:anyone|anybody|someone|somebody)(?: real| actually| even| human| alive)? "
            r"(?:there|home|out there|reading|around|awake)"
        ),
        r"\b(?:real|live|actual) (?:person|human|agent|people|humans)\b",
        r"\bhuman (?:agent|please|support|help|contact|assistance|operator|rep)\b",
        r"\b(?:agent|representative|operator|person|manager|supervisor) (?:please|now|asap)\b",
        rf"\b{_CALLBACK_EN}\b",
        r"\bwho (?:can|do|should) i (?:speak|talk) (?:to|with)\b",
        (
            r"\b(?:someone|somebody|anyone|anybody|a person|a human) i can (?:call|talk to|"
            r"speak to|speak with|talk with|reach|phone)\b"
        ),
        (
            r"\b(?:is|are) (?:the )?(?:manager|owner|doctor|dr|supervisor|boss|dentist|"
            r"person in charge) (?:in (?:now|today|right now)|there|around|available|on duty)\b"
        ),
    )
)

_HELPER = _alt(
    "persona|senor|senora|senorita|chica|chico|muchacha|muchacho|joven|agente|asesor|asesora|",
    "ejecutivo|ejecutiva|repartidor|repartidora|tecnico|person|guy|lady|girl|man|woman|",
    "agent|rep|representative|gentleman|employee|driver",
)
STRONG: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern)
    for pattern in (
        (  # asking for the very person who helped before: a named person, not a mention
            rf"\b(?:{_SPEAK_ES} con|{_CLITIC_TRANSFER} con|me (?:pasas|pasa|pasan|comunicas|"
            rf"comunica) con|(?:speak|talk) (?:to|with)|put me through to) (?:el|la|the) "
            rf"{_HELPER} (?:que|who|that) (?:me |nos |us )?(?:atendio|ayudo|helped|served)"
        ),
        rf"\bque no (?:sea|seas|es) (?:un |una |el |la )?{_BOT}",
        (
            r"\bno (?:quiero|deseo|me gusta|voy a) (?:seguir )?(?:hablar|hablando|platicar|"
            r"platicando|chatear|chateando|escribir|escribiendo|tratar|conversar) (?:con|a) "
            rf"(?:un |una |el |la |este |esta |tu |su |ningun |ninguna )?{_BOT}"
        ),
        r"\b(?:ya )?(?:basta|deja|dejate|dejen) de (?:bot|robot|respuestas automaticas)",
        r"\bno (?:eres|es) (?:una )?persona (?:pasame|comunicame|quiero|necesito)",
        r"\b(?:not|isnt|isn t|is not|aren t|arent) (?:a )?(?:bot|robot|machine|ai|chatbot)",
        (
            r"\b(?:dont|don t|do not|no more) (?:want|wanna|need)? ?(?:to )?"
            r"(?:talk|speak|chat)? ?(?:to|with)? ?(?:a |an |the |this |your |no )?"
            r"(?:bot|bots|robot|robots|machine|ai|chatbot|automated)"
        ),
        r"\bstop (?:the |this )?(?:bot|robot|automated)",
        r"\bno (?:quiero|deseo) (?:respuestas automaticas|un bot|un robot|una maquina)",
    )
)

ALONE = re.compile(
    r"(?:hola |oye |hello |hi |buenas |buenos dias |buenas tardes )?"
    r"(?:un |una |el |la |an |a )?(?:humano|persona|asesor|asesora|agente|operador|operadora|"
    r"representante|ejecutivo|ejecutiva|supervisor|gerente|encargado|encargada|human|agent|"
    r"operator|representative|rep|person|live agent|real person|persona real|humano real|"
    r"atencion humana|asesor humano|agente humano|human agent)"
    r"(?: por favor| please| ya| ahora| now| asap)*"
)

_RELATION = _alt(
    "mama|papa|madre|padre|hermano|hermana|hijo|hija|esposo|esposa|marido|mujer|novio|novia|",
    "jefe|jefa|contador|contadora|abogado|abogada|socio|socia|amigo|amiga|tio|tia|abuelo|",
    "abuela|abuelita|primo|prima|suegro|suegra|vecino|vecina|pareja|cunado|cunada|asistente|",
    "secretaria|doctor|doctora|medico|hijos|papas|cliente|clienta|empleado|empleada|chofer",
)
_RELATION_EN = _alt(
    "mom|mother|dad|father|brother|sister|son|daughter|wife|husband|partner|boss|accountant|",
    "lawyer|attorney|friend|uncle|aunt|grandma|grandpa|grandmother|grandfather|cousin|",
    "neighbor|neighbour|assistant|secretary|doctor|kid|kids|parents|client|colleague|",
    "coworker|employee|girlfriend|boyfriend|fiance",
)
_HELPED = _alt(
    "atendio|atendieron|ayudo|ayudaron|vino|contesto|hablo|llamo|entrego|trajo|instalo|dejo|",
    "helped|served|came|answered|called|delivered|installed|spoke|took|was|fue|estaba|esta|",
    "atiende|is|dijo|said|told",
)

BLOCKERS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern))
    for name, pattern in (
        (
            "price_per_person",
            r" (?:por|cada|each|per) (?:persona|cabeza|person|head|pax|comensal)s? |"
            r" \d+ (?:dollars |usd |pesos |euros |eur |mxn |bucks )?a (?:person|head) |"
            r" para (?:una|1|dos|2|tres|3|cuatro|4|cinco|5|seis|6|\d+) (?:persona|personas) |"
            r" for (?:one|1|two|2|three|3|four|4|\d+) (?:person|people) |"
            r" (?:persona|personas|person|people) (?:mas|extra|adicional|additional|more) |"
            r" precio por | cuanto (?:cuesta|sale|es|cobran) (?:por|la) persona ",
        ),
        (
            "legal_person",
            r" persona (?:fisica|moral|juridica|natural|legal) |"
            r" (?:natural|legal|juridical) person",
        ),
        (
            "trade_agent",
            r" agente(?:s)? (?:de |del )?(?:envios?|paqueteria|aduanas?|aduanal|aduanero|"
            r"seguros?|viajes?|carga|bienes raices|inmobiliari[oa]|transito|policia|cambio|"
            r"fletes?|embarque|transporte|la aseguradora|migracion|mensajeria|logistica|dhl|"
            r"fedex|ups|estafeta|comercial|libre|secreto|naviero|consignatario)|"
            r" (?:customs|shipping|insurance|travel|real estate|estate|freight|booking|"
            r"forwarding|sports|literary|secret|border|fbi|leasing|rental|ticket|clearing) "
            r"(?:agent|broker|agency)s? |(?<!alguien de la)(?<!someone from the)(?<!someone at the)"
            r" (?:agency|agencia) ",
        ),
        (
            "talks_about",
            rf"(?<! de) (?:mi|mis|nuestro|nuestra|nuestros) {_RELATION} |"
            rf" (?:my|our|his|her) {_RELATION_EN}s? |"
            rf" (?:la|el|una|un|esa|ese|this|the|a) {_HELPER} (?:que|quien|who|that) "
            rf"(?:me |nos |us |you |ya )?{_HELPED}|"
            r" ya (?:me |nos )?(?:atendio|atendieron|ayudo|ayudaron|hable|hablamos|platique|"
            r"llamaron|marcaron|contactaron|resolvio|resolvieron|soluciono|solucionaron)|"
            r" (?:already|just) (?:spoke|talked|called|helped|been helped)|"
            r" (?:spoke|talked) (?:to|with) (?:\w+ )?(?:yesterday|earlier|last|today|already)|"
            r" (?:hable|platique|hablamos) con (?:\w+ )*(?:ayer|antier|hace|la semana|el lunes|"
            r"el martes|esta manana|en la manana)|"
            r" (?:was|were|been) (?:talking|speaking|chatting) | estuve (?:hablando|platicando) |"
            r" (?:me|nos) (?:atendio|atendieron|ayudo|ayudaron) (?:muy |super |bien |excelente)|"
            r" (?:gracias|thanks|thank you) (?:a|to) ",
        ),
        (
            "quote",
            r" (?:me |nos |le )?(?:dijo|dijeron|comento|comentaron|menciono|mencionaron|"
            r"explico|explicaron|escribio|escribieron|decia|decian|contesto|respondio|indico|"
            r"indicaron|recomendo|recomendaron|sugirio) (?:que|me|nos) |"
            r" segun (?:el|la|ella) |"
            r" (?:he|she|they|it|someone|somebody|the agent|the bot) (?:said|says|told|wrote|"
            r"replied|answered|suggested) |"
            r" (?:told|tells|telling) (?:me|us|him|her) | was told | me dijeron |"
            r" dice (?:que|el mensaje|la pagina|el correo)|"
            r" (?:el|la|su) (?:mensaje|pagina|web|correo|anuncio|app|aplicacion) "
            r"(?:dice|decia|pone) | (?:says|said) (?:to|that|on) ",
        ),
        (
            "human_remark",
            r" (?:error|errores|derechos|cuerpo|consumo|uso|factor|capital|desarrollo|trafico|"
            r"genoma|recurso) humanos? | (?:es|somos|son|soy|eres|sea|seamos) humanos? |"
            r"(?<! un) ser humanos? |"
            r" lo humano | humanamente | human (?:error|rights|body|consumption|nature|"
            r"trafficking) | (?:im|i m|we re|were|you re|only|just) human | humanity |"
            r" humano como | tan humano | muy humano | mas humano | (?:el|un|los) trato humano |"
            r" calidad humana | calidez humana | equipo humano |"
            r" (?:la|su|una|el) (?:atencion|trato|servicio) (?:humana|humano|personal|"
            r"personalizada|personalizado) (?:\w+ ){0,5}(?:es|fue|era|son|esta|me encanta) |"
            r" (?:servicio|servicios|paquete|plan|opcion) de atencion (?:personal|personalizada|"
            r"humana) | atencion (?:personal|personalizada) (?:para|a) (?!mi |nosotros )\w+ |"
            r" (?:the|your|their) (?:human|personal) (?:touch|service|attention|staff) "
            r"(?:\w+ ){0,5}(?:is|was|are|were) ",
        ),
    )
)

CUES: frozenset[str] = frozenset(
    _words(
        "persona alguien humano humana agente asesor asesora ejecutivo ejecutiva operador ",
        "operadora representante encargado encargada gerente supervisor supervisora jefe jefa ",
        "dueno duena responsable person human someone somebody anyone anybody agent rep ",
        "representative manager supervisor owner staff operator bot robot maquina",
    )
)
CUE_PREFIXES: tuple[str, ...] = _words(
    "llam marcame marque habl platic atien atend comunic contact pasame pasen pasas conect ",
    "transf call speak talk connect transfer phone ring",
)
NOT_NAMES: frozenset[str] = frozenset(
    _words(
        "el la los las un una mi mis su sus tu tus usted ustedes ella ellos quien que the a an ",
        "my your our this that it them us you me him her someone somebody anyone pedido orden ",
        "factura app aplicacion pagina web tarjeta banco pago envio paquete order invoice card ",
        "payment package delivery account cuenta problema problem",
    )
)
TYPOS: dict[str, str] = dict(
    pair.replace("_", " ").partition(":")[::2]  # "a:b" -> (a, b)
    for pair in _words(
        "yamen:llamen yame:llame yamar:llamar yamame:llamame yamenme:llamenme ",
        "ablar:hablar hablr:hablar hbalar:hablar habalr:hablar halbar:hablar avlar:hablar ",
        "hablarr:hablar persnoa:persona persna:persona perosna:persona presona:persona ",
        "peronsa:persona prsona:persona umano:humano humnao:humano huamno:humano jumano:humano ",
        "alguein:alguien algien:alguien aguien:alguien alguin:alguien alguen:alguien ",
        "argien:alguien agnete:agente ajente:agente agetne:agente asesr:asesor acesor:asesor ",
        "asesro:asesor asersor:asesor encrgado:encargado encargao:encargado encarado:encargado ",
        "pasme:pasame pasam:pasame pasamw:pasame comunicam:comunicame comunikame:comunicame ",
        "qiero:quiero quero:quiero kiero:quiero quiro:quiero quieor:quiero nesecito:necesito ",
        "nesesito:necesito nececito:necesito necesto:necesito necsito:necesito ",
        "nescesito:necesito q:que k:que ke:que qe:que xq:porque xfa:por_favor porfa:por_favor ",
        "porfis:por_favor porfavor:por_favor plis:please pls:please plz:please plss:please ",
        "pleas:please pliss:please x:por cn:con kon:con coon:con llamemne:llamenme ",
        "yamenme:llamenme llamnme:llamenme gerenet:gerente grente:gerente speek:speak ",
        "spek:speak tlak:talk tak:talk tallk:talk someon:someone somone:someone ",
        "somene:someone soemone:someone sombody:somebody somebdy:somebody huamn:human ",
        "humna:human hooman:human humen:human hman:human persn:person peson:person ",
        "prson:person represenative:representative representive:representative ",
        "reprisentative:representative manger:manager manageer:manager managr:manager ",
        "agnet:agent agen:agent wnat:want wnt:want ned:need u:you ur:your r:are ppl:people ",
        "sb:somebody smb:somebody cm:como kmo:como cmo:como komo:como w:with",
    )
)
