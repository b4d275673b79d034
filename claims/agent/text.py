"""The claim agent's one text toolkit: words, stop words, stems, synonyms, ids.

Selection (BM25, the glossary), composition (which parts of a clause speak to
the question) and the guard read words through here, so a word means the same
thing at every step. Pure functions with no Django or database access.

* ``words`` / ``STOP_WORDS`` / ``stem`` / ``stems``: lower-cased tokens and
  Snowball English stems (PyStemmer) of the content words;
* ``GLOSSARY`` / ``glossary_terms`` / ``expand``: how customers say it (US and
  New Zealand everyday terms) and the wording's words for the same thing;
* ``terms``: the set of content stems of a customer's message, with the
  wording's words for what it says (composition matches these to parts);
* ``clause_body`` and the clause ids written in a message.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from knowledge.models import LINE_PREFIXES
from knowledge.wording_format import SEGMENTS

WORD_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")

# Clause ids as the wording writes them (MTR-BEN-03) and as customers type
# them ("mtr ben 3", "MTR_BEN_03", "clause BEN-03"). Segment names are the
# wording format's (knowledge.wording_format.SEGMENTS).
_SEGMENTS = "|".join(s.lower() for s in SEGMENTS)
_PREFIXES = "|".join(p.lower() for p in LINE_PREFIXES.values())
FULL_ID_RE = re.compile(
    rf"\b(?P<prefix>{_PREFIXES})[\s_\-]*(?P<seg>{_SEGMENTS})[\s_\-]*(?P<nn>\d{{1,3}})\b",
    re.IGNORECASE,
)
SEGMENT_ID_RE = re.compile(
    rf"(?P<clause>\b(?:clause|section|part)\s+)?\b(?P<seg>{_SEGMENTS})(?P<sep>[\s_\-]*)(?P<nn>\d{{1,2}})\b",
    re.IGNORECASE,
)
# "clause 3 of the motor policy": the third clause of the wording.
NUMBERED_CLAUSE_RE = re.compile(r"\b(?:clause|section)\s+(?:no\.?\s*|number\s+)?(\d{1,2})\b", re.I)

_METADATA_LINE_RE = re.compile(r"^(kind|schedule section|visibility)\s*:", re.IGNORECASE)

# English function words for the BM25 and embedding paths (the baseline has
# its own list, below, taken from the seed). Kept small and explicit: words
# such as "not", "no" and "without" carry meaning in a wording.
STOP_WORDS = frozenset(
    """
    a about above after again am an and any are as at be because been before being
    between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i i'm
    if in into is it it's its itself just me more most my myself now of off on once
    only or other our ours ourselves out over own same she should so some such than
    that that's the their theirs them themselves then there these they this those
    through to too under until up us very was we were what when where which while who
    whom why will with would you your yours yourself yourselves u ur pls please
    hi hello thanks thank guys ok okay tho though
    """.split()
)


def words(text: str) -> list[str]:
    """Lower-cased word tokens ("it's" stays one token)."""
    return WORD_RE.findall(text.lower().replace("\u2019", "'"))


@functools.cache
def _stemmer() -> Any:
    import Stemmer  # PyStemmer: Snowball stemmers in C

    return Stemmer.Stemmer("english")


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball English stem of one lower-case word."""
    return str(_stemmer().stemWord(word))


def stems(text: str) -> list[str]:
    """Content-word stems: stop words dropped, Snowball English stemming."""
    tokens = [w for w in words(text) if w not in STOP_WORDS and not w.isdigit()]
    return list(_stemmer().stemWords(tokens))


# --- how customers say it, and how the wording says it -----------------------
#
# Customer phrase (regex, word-bounded, lower case) -> the wording's words.
# Domain knowledge, not a list of test questions: each entry is a general
# term an insurer's contact centre hears (New Zealand slang, US terms), kept
# line-neutral. Selection appends the wording's words to the message before
# ranking; composition matches a clause's parts on them too.
# Animals a car meets on the road or that get into a house.
_ANIMAL = r"(?:possums?|dogs?|cats?|cows?|sheep|horses?|birds?|pigs?|goats?|animals?)"

GLOSSARY: dict[str, str] = {
    # money and settlement
    r"deductibles?|deductable": "excess",
    r"total(?:l)?ed|totals|write[- ]?off|written off": "total loss write-off",
    r"payout|pay out": "settle pay",
    # what a repaired car or house is worth afterwards
    r"(?:worth|sells? for|valued at) (?:\$?[\w,.]+ )?less|"
    r"(?:lost|loses|losing|drop(?:ped)? in|loss of) (?:\w+ )?(?:resale )?value|"
    r"diminished value|resale value|devalued": "loss in value",
    r"refund(?:ed)?": "refund cancel",
    # theft and damage
    r"stolen|steal(?:s|ing)?|stole|robbed|robbery": "theft",
    r"nicked|pinched|swiped|knicked|ripped off": "stolen theft",
    r"catalytic converters?|cat converters?": "theft parts stolen from your car",
    r"burgl(?:ed|ary|ar|ars|arized)|broken into|break[- ]?in|broke into": "burglary theft break-in",
    r"keyed|tagged|graffiti": "vandalism malicious damage",
    r"riots?|rioters|civil unrest|looting|looted": "vandalism malicious damage",
    r"arson|arsonist|torched|set (?:on )?fire|burnt out|burned out": "fire",
    r"fender[- ]bender|prang(?:ed)?|rear[- ]ended|smash(?:ed)? into|crash(?:ed)?|wreck": (
        "accident collision"
    ),
    r"wrecked|trashed": "damaged",
    r"hit[- ]and[- ]run": "accident collision other driver",
    # someone else's car or things: the wording's "other people's ... (third party)"
    # (not "my other car": the customer's own second car)
    r"(?:the )?(?<!my )(?<!our )other (?:driver|guy|person|party|car|vehicle)'?s?|"
    r"someone else'?s|someone'?s (?:car|ute|van|truck|vehicle|fence|wall|house|property)|"
    r"(?:his|her|their) (?:car|ute|van|truck|vehicle|fence|wall|house|property)": (
        "other people's cars property third party"
    ),
    r"deer|moose|elk|kangaroos?": "animal accident collision",
    # a possum is hit on the road as often as it nests in a roof: the animal, and
    # the road only when the message says it was hit or ran across
    r"possums?|stoats?|ferrets?|hedgehogs?|raccoons?|squirrels?": "animals pests",
    rf"(?:hit|ran over|run over|swerved (?:to miss|around|for)|collided with|struck) "
    rf"(?:a |an |the )?(?:\w+ )?{_ANIMAL}|"
    rf"{_ANIMAL} (?:\w+ ){{0,2}}(?:ran|run|jumped|darted|walked|came) "
    r"(?:across|out|onto|in front)": ("animal accident collision"),
    r"stopped working|broke down|broken down|packed up|conked out|died|not working": (
        "breakdown mechanical breakdown"
    ),
    # parts that wear out or fail mechanically (a stolen catalytic converter is theft: not here)
    r"transmissions?|clutch(?:es)?|alternators?|timing belts?|head gaskets?|starter motors?|"
    r"radiators?": "mechanical breakdown",
    r"spilt|spilled|dropped": "accidental damage",
    # a thing knocked or fallen off where it stood (a tree "fell over" in a storm: not here)
    r"(?:fell|fallen|falls|falling|slid|slipped|knocked|tipped|toppled) off (?:the |a |my |our )?"
    r"(?:table|bench|benchtop|desk|shelf|shelves|counter|bed|couch|wall|stand|cabinet|dresser)|"
    r"(?:knocked|tipped) over|knocked \w+ (?:off|over)": "accidental damage",
    r"intentional(?:ly)?|deliberate(?:ly)?": "damage done on purpose",
    r"seiz(?:e|ed|ure)|confiscat(?:e|ed)": "police illegal activity",
    r"cops?": "police",
    r"mou?ld|mildew|rot|termites?|rodents?|mice|rats": "gradual damage vermin wear and tear",
    r"acts? of god": "storm natural hazard",
    # wind: a storm (the NHC's natural hazards are earthquake, landslip, volcano, tsunami)
    r"hurricanes?|tornado(?:e?s)?|cyclones?|hail ?storms?|windstorms?|gales?|winds?": "storm",
    r"sinkhole|foundation|erosion|settling|shifting": "earth movement subsidence landslip",
    # vehicles and driving
    r"windshield": "windscreen",
    r"tires?|tire blowouts?|blow ?outs?": "tyre burst puncture",
    r"rental|loan car|loaner|courtesy car|rent a car": "hire car alternative transport",
    # getting about while the car is off the road (a car seat, car insurance or a car
    # loan is not a need for transport)
    r"(?:need|needs|needed|without) (?:a |my |the |another )?"
    r"(?:car|vehicle|transport|wheels|ride)\b(?![- ](?:seats?|insurance|polic\w*|loans?|parks?|"
    r"wash\w*|cover\w*|capsules?|keys?|fobs?|rego|registration|licen[cs]es?)\b)|"
    r"(?:car|ute|van|vehicle) (?:is |was |has been |will be )?off the road|"
    r"off the road (?:for|while|until)|"
    r"(?:get|getting) (?:around|to work) (?:while|until|without)": (
        "hire car alternative transport"
    ),
    r"u-?haul": "hire moving van truck",
    r"bodily injury|bodily injuries": "injury to other people third party liability",
    r"physical damage": "accidental damage",
    r"girlfriend|boyfriend|fianc[eé]e?|spouse|wife|husband|de facto": "family members",
    r"sons?|daughters?|kids?|teens?|teenagers?|child|children": "family members",
    r"tow truck|towed": "towing",
    r"panel ?beaters?|mechanics?|body shop|auto shop": "repairer repairs",
    # how well a repair was done: the repairer's workmanship and our guarantee of it
    r"paint (?:does ?n[o']t|does not|did ?n[o']t|did not|does ?nt) match|"
    r"(?:still )?rattl(?:es|ing|e)|"
    r"(?:botched|shoddy|dodgy|poor|bad|sloppy|faulty) (?:\w+ )?(?:repairs?|job|work)|"
    r"(?:repairs?|job|work) (?:(?:was|were|is|are|has|have)(?:n'?t| not| never)|not|never) "
    r"(?:been )?(?:done )?(?:properly|right)": "repairs workmanship guarantee",
    r"wof|warrant of fitness|rego|registration": "roadworthy registered warrant of fitness",
    r"lost (?:wages|pay|income|earnings)|(?:could ?n[o']t|could not|can'?t|cannot|unable to) "
    r"(?:get to )?work|missed work|time off work": "loss of income",
    r"lie|lied|lying|fraud\w*|fake|faked|made up|exaggerat\w*|dishonest\w*": "false claims",
    r"beers?|drunk|drink(?:ing)?|booze|over the limit|dui|dwi|under the influence|"
    r"intoxicated|stoned|high on|while high|(?:was|got|were) high": "alcohol drugs impaired",
    r"learners?|restricted licen[cs]e": "learner licence drivers",
    # US spelling: Snowball stems "license" and "licence" apart
    r"licenses?|licensed": "licence",
    r"mags|lowered|modded|modifications?|aftermarket": "modifications tell us",
    r"uber|ola|doordash|uber eats|lyft": "uber delivery business use",
    r"interislander|bluebridge|ferry": "ferry new zealand travel",
    r"another state|out of state|other states|interstate": "where covered new zealand overseas",
    r"(?:away|overseas|abroad|travelling) for (?:\w+ ){0,2}(?:weeks?|months?)": (
        "home empty unoccupied"
    ),
    r"motel|hotel|airbnb stay|loss of use": "temporary accommodation",
    r"where (?:do|will|can|should|would|are) (?:i|we) (?:going to )?(?:stay|live|sleep)|"
    r"(?:somewhere|a place|anywhere) to (?:stay|live|sleep)": "temporary accommodation",
    r"full coverage|comprehensive|collision coverage": "accidental damage cover",
    r"liability|sued|sue|lawsuit": "legal liability third party",
    r"petrol|gas|gasoline|diesel": "fuel",
    r"cab": "taxi",
    r"bus|train": "public transport",
    r"tickets?|fines?": "fines",
    r"tolls?": "tolls",
    # home and contents
    r"renters?|renting|tenants?": "contents",
    r"homeowners?|dwelling": "home house",
    r"bach|crib|holiday home": "holiday home",
    r"reno(?:vation)?s?|extension|renovating": "building work alterations",
    r"(?:adding|add|build(?:ing)?|putting (?:in|on)) (?:a |an |another )?(?:new |second |extra )?"
    r"(?:store?y|storeys|floor|room|bedroom|bathroom|deck|garage|sleepout|granny flat|"
    r"carport)": "building work alterations",
    r"builder|tradie|contractor": "building work",
    r"rubble|debris|mess": "debris removal",
    r"unliveable|unlivable|can'?t live in": "uninhabitable temporary accommodation",
    r"sunnies|sunglasses|handbag|backpack|gym bag|wallet|purse|luggage|suitcase": (
        "personal belongings"
    ),
    r"ring|necklace|bracelet|earrings|jewelry": "jewellery",
    # cash taken, not cash paid out (CNT-COV-06 settles "in cash")
    r"(?:stolen|lost|missing) (?:cash|money)|"
    r"(?:cash|money) (?:was |is |got |been )*(?:stolen|lost|taken)": "cash valuables limits",
    r"telly|television": "tv",
    r"ps5|xbox|playstation|console": "electronics",
    r"e-?bikes?|scooters?|bicycles?": "bike",
    r"uni hall|hall of residence|dorm|boarding school|storage unit": "away from home",
    r"work laptop|employer'?s?|company laptop": "business equipment",
    r"fitted carpets?|built[- ]in|fixtures": "fixtures what we mean by your home contents",
    r"roommates?|flatmates?|boarders?|guests?": "flatmate guest",
    r"landlord": "landlord",
    r"personal property|possessions": "contents belongings",
    r"vehicles?|automobiles?": "car",
    r"power (?:outage|cut|failure)s?|blackouts?|power went out|lost power": (
        "power supply cut off"
    ),
    r"refrigerators?|groceries": "fridge freezer food",
    r"movers|moving (?:company|truck|van)|relocat(?:e|ed|ing|ion)": "moving house removal",
    r"furnace|boiler|hvac|heating system|air condition(?:er|ing)|central air|water heater": (
        "appliance breakdown heat pump hot-water cylinder"
    ),
}
_COMPILED = [(re.compile(rf"\b(?:{k})\b", re.IGNORECASE), v) for k, v in GLOSSARY.items()]


def glossary_terms(message: str) -> list[str]:
    """The wording's words for the customer words found in ``message``."""
    return [words for pattern, words in _COMPILED if pattern.search(message)]


# The customer's name for us: "do I need to tell my insurance company about a new
# driver?" asks us, as "do I need to tell you...?" does. Read as "you", so that a
# question to us is not taken for one about insurers in general (the "fits"
# classifier had learned "insurer" from other kinds of insurance). Only for our
# lines or no line: "my life insurance company" stays another insurer.
_OUR_NAME = re.compile(
    r"\bmy (?:(?:car|auto|motor|vehicle|home|homeowners?|house|renters?|contents) )?"
    r"(?:insurance (?:compan(?:y|ies)|providers?|carriers?|co)|insurers?)\b",
    re.IGNORECASE,
)


# Kinds of car read as "car": the embedding model learnt "car" from text where
# "ute" is rare ("my ute got pranged, am I covered?" looked unlike any motor
# question to the "fits" classifier, "my car got pranged" did not). The wording's
# "your car" is whatever vehicle the schedule names. "telly" read as "TV" was
# measured and left out: retrained, it moved the cut-off 0.62 -> 0.63, and an
# inventory question with it.
_KIND_OF_CAR = re.compile(
    r"\b(?:utes?|4wds?|4x4s?|suvs?|hatchbacks?|station wagons?|sedans?)\b", re.IGNORECASE
)


def rewrite(message: str) -> str:
    """``message`` with the customer's name for us read as "you", and a kind of car as "car"."""
    return _KIND_OF_CAR.sub("car", _OUR_NAME.sub("you", message))


@functools.lru_cache(maxsize=1024)
def expand(message: str) -> str:
    """``message`` (its name for us read as "you") and the wording's words for what it says."""
    found = glossary_terms(message)
    message = rewrite(message)
    return f"{message} ({'; '.join(found)})" if found else message


# "Is it covered?", "will you pay for it?", "can I claim for a ...": whether something is
# covered or paid for. Composition puts the wording before a card that answers another kind of
# question; card retrieval never lets such a card lead.
_ASKS_COVER = re.compile(
    r"\b(?:covered|covers?|coverage|insured|pay(?:s)? (?:for|out)|paid for|claim (?:for|an?))\b",
    re.IGNORECASE,
)


def asks_about_cover(text: str) -> bool:
    """Whether a question asks if something is covered or paid for."""
    return bool(_ASKS_COVER.search(text))


# Filler a customer writes that never says what the question is about; also
# dropped from matching (beyond STOP_WORDS, which keeps negations for BM25).
_FILLER = frozenset(
    """no nor not dont don't doesn't isn't can't cant get got gonna wanna hey im
    policy insurance northwind still also much many""".split()
)


@functools.lru_cache(maxsize=8192)
def _text_terms(text: str) -> frozenset[str]:
    return frozenset(
        stem(w) for w in words(text) if len(w) >= 3 and w not in STOP_WORDS and w not in _FILLER
    )


# A customer's name for us ("my insurance company"): it names no part of a clause, and its
# "company" would otherwise match the finance company or the removal company in the wording.
_INSURER_NAMED = re.compile(r"\binsurance (?:compan(?:y|ies)|providers?|co)\b", re.IGNORECASE)
# "How do claims work?" asks how, not about work (the wording's "emergency work", "building
# work"): the verb is dropped when a "how" question ends on it.
_HOW_IT_WORKS = re.compile(
    r"\b(how (?:do|does|will|would|is|are)\b[^.?!,]{0,60}?)\bwork(?:s|ing)?(?=\s*(?:[.?!]|$))",
    re.IGNORECASE,
)


def terms(text: str, *, customer: bool = False) -> frozenset[str]:
    """Content stems of ``text``; a customer's text also gets the wording's words.

    The glossary is one-directional: a clause is read in its own words, a
    customer's message in theirs plus the wording's words for them.
    """
    if customer:
        text = _HOW_IT_WORKS.sub(r"\1", _INSURER_NAMED.sub(" ", text))
    found = _text_terms(text)
    if customer:
        extra = glossary_terms(text)
        if extra:
            found = found | _text_terms(" ".join(extra))
    return found


def clause_body(text: str) -> str:
    """The body of a stored clause: its ``##`` heading and metadata lines removed."""
    lines = text.splitlines()
    out: list[str] = []
    in_header = True
    for line in lines:
        stripped = line.strip()
        if in_header and (stripped.startswith("## ") or _METADATA_LINE_RE.match(stripped)):
            continue
        if in_header and not stripped:
            continue
        in_header = False
        out.append(line)
    return "\n".join(out).strip()


def ids_written(message: str) -> list[str]:
    """Every full clause id the message writes (any line's), normalised, in order.

    "What does MTR-BEN-99 say?" gives ``["MTR-BEN-99"]`` whether or not the
    wording has it: an id the directory lacks is reported as not found, never
    replaced by a clause that happens to be near.
    """
    found = (
        f"{m['prefix'].upper()}-{m['seg'].upper()}-{int(m['nn']):02d}"
        for m in FULL_ID_RE.finditer(message)
    )
    return list(dict.fromkeys(found))


def ids_in_message(message: str, directory_ids: tuple[str, ...]) -> list[str]:
    """Clause ids of this directory that the message names, in order of mention.

    Understands "MTR-BEN-03", "mtr ben 3", "MTR_BEN_3", "clause BEN-03" (the
    line's prefix is taken from the directory) and "clause 3" (the third
    clause of the wording, in directory order). Ids outside the directory are
    ignored: the selector only names what it may fetch.
    """
    known = set(directory_ids)
    prefixes = sorted({cid.split("-", 1)[0] for cid in directory_ids})
    found: list[tuple[int, str]] = []
    full_spans: list[tuple[int, int]] = []
    for m in FULL_ID_RE.finditer(message):
        full_spans.append(m.span())
        cid = f"{m['prefix'].upper()}-{m['seg'].upper()}-{int(m['nn']):02d}"
        if cid in known:
            found.append((m.start(), cid))
    if len(prefixes) == 1:
        for m in SEGMENT_ID_RE.finditer(message):
            if any(a <= m.start("seg") < b for a, b in full_spans):
                continue  # part of a full id, e.g. another line's HOM-COV-01
            # "ben 3" alone could be a name; ask for a clause word, a hyphen
            # or underscore, or a two-digit number before reading it as an id.
            if not (m["clause"] or m["sep"].strip(" ") or len(m["nn"]) == 2):
                continue
            cid = f"{prefixes[0]}-{m['seg'].upper()}-{int(m['nn']):02d}"
            if cid in known:
                found.append((m.start("seg"), cid))
    if not found:
        for m in NUMBERED_CLAUSE_RE.finditer(message):
            n = int(m[1])
            if 1 <= n <= len(directory_ids):
                found.append((m.start(), directory_ids[n - 1]))
    ordered: list[str] = []
    for _, cid in sorted(found):
        if cid not in ordered:
            ordered.append(cid)
    return ordered


# --- signs that a question is outside a motor, home or contents wording -----
#
# General vocabulary of other kinds of insurance and of questions a wording
# does not answer (prices and advice, other insurers' products, US-only
# products and state rules, how claims are handled). Domain knowledge, not a
# list of test questions; the "something fits" classifier
# (claims/agent/selection/learned.py) weighs each as one feature, learned on
# the tune half, so a sign alone never decides.
_US_STATES = (
    "alabama|alaska|arizona|arkansas|california|colorado|connecticut|delaware|florida|georgia|"
    "hawaii|idaho|illinois|indiana|iowa|kansas|kentucky|louisiana|maine|maryland|massachusetts|"
    "michigan|minnesota|mississippi|missouri|montana|nebraska|nevada|new hampshire|new jersey|"
    "new mexico|new york state|north carolina|north dakota|ohio|oklahoma|oregon|pennsylvania|"
    "rhode island|south carolina|south dakota|tennessee|texas|utah|vermont|virginia|"
    "washington state|west virginia|wisconsin|wyoming|nyc|ny|nj|ca|tx|fl|pa"
)
OUTSIDE_SIGNS: dict[str, str] = {
    # other kinds of insurance and of money matters
    "other_domain": (
        r"life (?:insurance|insurer|policy|policies|cover|coverage|assurance)|term life|"
        r"whole life|universal life|variable life|beneficiar(?:y|ies)|death benefit|"
        r"annuit(?:y|ies|ant)|health (?:insurance|plan|plans|cover|coverage|care|savings)|"
        r"healthcare|medical insurance|medicare|medicaid|medigap|obamacare|affordable care act|"
        r"hmo|ppo|hsa|cobra|co-?pays?|coinsurance|dental|vision (?:insurance|plan)|"
        r"prescriptions?|disabilit(?:y|ies)|income protection|long[- ]term care|ltc|"
        r"critical illness|cancer|trauma cover|funeral|burial|final expense|retire(?:ment|d|e)?|"
        r"401 ?\(?k\)?|403 ?\(?b\)?|ira|roth|pensions?|kiwisaver|superannuation|social security|"
        r"workers'? comp(?:ensation)?|pet insurance|travel insurance|boat insurance|"
        r"business insurance|umbrella (?:insurance|policy|coverage)|mortgage (?:protection|"
        r"insurance)|surrender value|cash surrender|pregnan\w+|doctors?|hospital|surgery|"
        r"death|deceased|passed away|"
        # terms of life, health and income products, not of a motor, home or contents wording
        r"key (?:person|man|employee) (?:insurance|cover)|taxable|tax[- ]deductible|taxes on|"
        r"underwrit\w*|riders? (?:on|to|for) (?:a |an |my |the |your )?(?:\w+ )?"
        r"(?:policy|insurance)|(?:policy|insurance) riders?|(?<!actual )cash value|grace period|"
        r"elimination period|waiting period|"
        r"convertible (?:policy|term|insurance)|medical exam\w*|out[- ]of[- ]pocket|"
        r"(?:lose|lost|losing) my job|unemploy\w*"
    ),
    # another insurer's product (US and New Zealand insurers)
    "other_insurer": (
        r"geico|state farm|all ?state|progressive|nationwide|liberty mutual|travelers|"
        r"farmers insurance|usaa|aaa|esurance|the hartford|erie|american family|metlife|"
        r"safeco|kemper|grange|amica|prudential|aflac|humana|aetna|cigna|blue cross|"
        r"blue shield|unitedhealth\w*|kaiser|new york life|northwestern mutual|mass ?mutual|"
        r"john hancock|transamerica|primerica|lemonade|ami insurance|tower insurance|vero|"
        r"aa insurance|fmg|youi|southern cross|cove insurance|state insurance|lumley|nzi|"
        r"initio|protecta"
    ),
    # US-only motor products, limits and state rules
    "us_only": (
        r"pip|personal injury protection|med ?pay|medical (?:payments?|expenses?)|voluntary "
        r"(?:deductible|excess)|sr-? ?22|sr-? ?50|fr-? ?44|"
        r"non[- ]?owners? (?:\w+ )?(?:insurance|policy|coverage)|rental reimbursement|"
        r"named driver polic(?:y|ies)|"
        r"plpd|no[- ]fault|gap (?:insurance|cover|coverage)|\d{2,3}/\d{2,3}(?:/\d{1,3})?|"
        r"state minimum|minimum (?:coverage|liability)|state law|required by law|by law|"
        r"legally required|dmv|" + _US_STATES
    ),
    # prices, quotes and advice on what to buy: a wording does not say
    "price_advice": (
        # a quote for insurance, not the repairer's quote (MTR-CLM-03); the price of
        # insurance, not the price paid for an item; "expensive" insurance, not "expensive
        # jewellery" (a valuable)
        r"rates?|(?<!repair )(?<!own )quotes?(?! (?:for|from|on) (?:the |a |my |our )?(?:car )?"
        r"(?:repairs?|repairers?|panel ?beaters?|mechanics?|builders?|work))|"
        r"(?<!full )(?<!purchase )(?<!original )pric(?:e|es|ing)(?! (?:i|we) paid)|"
        r"cheap\w*|afford\w*|expensive(?! (?:jewel\w*|items?|"
        r"things|stuff|rings?|watch\w*|bikes?|cameras?|laptops?|phones?|electronics|art|"
        r"paintings?|equipment|gear|tools?|possessions|belongings|valuables))|"
        r"go(?:es)? up|increase\w*|raise my|discounts?|how much (?:is|does|do|would|should|will) "
        r"(?:it |a |an |my |the )?(?:\w+ )?(?:insurance|policy|coverage|cover) cost|"
        r"how much (?:\w+ )?(?:insurance|coverage|cover|liability) (?:do|should|would)|"
        r"should i (?:get|buy|carry|have|choose|take|purchase|add|drop|keep|cancel|switch)|"
        r"should i (?:lower|raise|increase|reduce|change) my (?:\w+ )?(?:deductible|excess|cover|"
        r"coverage|limits?|premium)|(?:deductible|excess|premium)s? (?:usually|normally|typically)|"
        r"credit (?:score|rating|history)|do (?:i|we) (?:really |even )?need (?:it|this|that|one)|"
        # (whether to buy a kind of insurance is CLEARLY_OUTSIDE; "coverage" is also a limit)
        r"do (?:i|we) (?:really |even |still )?need (?:a |an )?(?:\w+ )?coverage|"
        r"(?:is it )?worth (?:claiming|making a claim|"
        r"filing a claim|putting (?:in )?a claim)|"
        r"worth it|best|recommend\w*|which (?:company|insurer|policy|coverage|plan)|"
        # shopping for insurance, not the body shop the repairs are done at
        r"good idea|compare|comparison|(?<!body )(?<!repair )(?<!panel )(?<!paint )(?<!auto )"
        r"shop(?:ping)? (?:around|for)|agents?|brokers?|"
        r"(?:average|typical) (?:\w+ ){0,2}(?:deductible|excess|premium|"
        r"cost|amount|limit)s?|(?:can|could|should|where|how) (?:do |does |can )?(?:i|you|we|"
        r"someone) (?:get|buy|find|obtain|purchase) (?:\w+ ){0,2}(?:insurance|a policy|cover|"
        r"coverage)"
    ),
    # how claims are handled, which a wording does not describe
    "claim_process": (
        r"how long (?:\w+ ){0,6}(?:take|takes|taking|to (?:settle|process|pay|close|get paid|"
        r"hear))|dispute|appeal|claims? (?:history|record|records)|clue report|"
        r"(?:close|closed|cancel|withdraw|reopen)\w* (?:a|my|the|an) (?:\w+ ){0,3}claim|"
        r"endorse|cheque|check from|lawyer|attorney|small claims|sue (?:my|the) insur\w+|"
        r"subrogat\w*"
    ),
}
# Phrases that put a question outside any motor, home or contents wording on
# their own, whatever else it says: the "fits" classifier is not asked. Kept
# apart from OUTSIDE_SIGNS (which the classifier weighs, one feature each) so
# that they do not move its cut-off: each names a topic no clause of ours
# answers (a vet's bill, gap insurance, market norms for an excess, what to do
# once a claim is declined, how long a claim stays on record).
CLEARLY_OUTSIDE = (
    r"vets?|vet'?s bills?|veterinar\w*|supplemental insurance|secondary insurance|"
    # a pet's own health, identity fraud, a US condominium assessment or form number
    r"pets?'? (?:injur(?:y|ies)|illness(?:es)?|sickness|surgery|medical|health)|"
    r"(?:injur(?:y|ies)|illness(?:es)?) (?:to|of) (?:my |our |a |the )?(?:pets?|dogs?|cats?)|"
    r"identity (?:theft|fraud)|stolen identity|loss assessment|ho-? ?[1-8]|"
    r"investments|investment (?:advis\w+|accounts?|portfolios?|returns?|funds?|plans?)|"
    r"gap (?:\w+ )?(?:insurance|cover|coverage)|parts? [a-d] of|"
    # the lettered parts of a US homeowners form ("dwelling coverage A", "coverage B")
    r"coverage [a-f](?=\s*(?:[?.,)]|$| (?:of|in|on|for|and|or|is|mean|means|cover|covers)\b))|"
    # how the premium is paid (a mortgage escrow, by card, monthly): no clause says
    r"escrow|pay (?:for )?(?:my|our|the|your) (?:\w+ ){0,2}(?:insurance|premiums?)(?: bills?)? "
    r"(?:through|with (?:a |my )?(?:credit|debit|card|paypal|check|cheque)|by (?:credit|debit|"
    r"card|direct debit|check|cheque|the month)|monthly|online|in instal?lments|using|via)|"
    r"(?:insurance|premiums?|rates?|prices?|costs?) (?:\w+ ){0,2}(?:rise|rises|rising)|"
    r"(?:coverage|cover|insurance) (?:do|would|should) (?:i|we) (?:really )?need|"
    r"(?:coverage|cover|insurance) is enough|enough (?:cover|coverage|insurance)|"
    r"(?:normal|usual|common|highest|lowest) (?:possible )?(?:deductible|excess|premium)s? "
    r"(?:for|on|with) (?:a |an )?(?:\w+ )?(?:insurance|polic(?:y|ies))|"
    r"on (?:my |your |the |their )?(?:driving |insurance )?record|"
    r"(?:accidents?|claims?|tickets?|convictions?) (?:\w+ )?stays? on (?:my |your |the )?"
    r"(?:\w+ )?(?:insurance|policy|history)|"
    r"claims? (?:is |was |got |has been |been )?(?:denied|declined|rejected|refused)|"
    r"(?:denied|declined|rejected|refused) claims?|"
    r"claim (?:is |was |be )?(?:still )?(?:open|complete|completed|finished|closed|finali[sz]ed)|"
    # term insurance is a life product ("long-term care" and "short-term" are not it)
    r"(?<!-)term (?:life )?(?:insurance|assurance|polic(?:y|ies)|plans?)|"
    # the law and the council, not the wording
    r"(?:is|was) (?:that|this|it) (?:legal|illegal|lawful|against the law|an offence)|"
    # what drives the premium, and pausing a policy: a person's to say, not the wording's
    r"(?:insurance|premiums?|rates?|quotes?) (?:is |are )?(?:so|too|this|that) (?:high|expensive)|"
    r"clean (?:driving )?record|"
    r"how much (?:is it|does it cost|would it cost|will it cost|extra is it) to add|"
    # buying a property: reports and inspections a buyer orders, not the wording's
    r"builders?'? reports?|building (?:inspection|report)s?|lim reports?|"
    r"pre-?purchase (?:inspection|report)s?|"
    r"(?:insurance|premiums?|polic(?:y|ies)) (?:cost|costs|be|is|are) (?:more|less|higher|lower)\b|"
    r"how much (?:is|are|would be|will be) (?:\w+ ){0,3}(?:insurance|premiums?) (?:on|for|in) "
    r"(?:a|an|my|our|the)\b|insurance (?:\w+ ){0,2}(?:included|part of|paid|bundled) (?:in|with|"
    r"through|into) (?:my |the |our |a )?mortgage|"
    # what kinds of insurance are, beside one another: a wording describes only its own
    r"difference between (?:\w+ ){0,3}(?:insurance|cover|coverage|polic(?:y|ies)|plans?) and "
    r"(?:\w+ ){0,3}(?:insurance|cover|coverage|polic(?:y|ies)|plans?)|"
    r"difference between (?:\w+ ){1,3}and (?:\w+ ){0,3}(?:insurance|cover|coverage|polic(?:y|ies)|"
    r"plans?)|"
    r"(?:is|are) (?:\w+ ){0,3}insurance (?:the same as|different (?:from|than|to))|"
    # rating factors: what the premium depends on
    r"(?:credit|colou?r|age|gender|sex|marital status|zip ?code|post ?code|occupation) "
    r"(?:\w+ ){0,4}(?:affects?|impacts?|determines?|raises?|lowers?) (?:\w+ ){0,2}(?:insurance|"
    r"premiums?|rates?)|"
    # other kinds of motor policy, driving uninsured, who insures a car, US stacking
    r"(?:liability|collision|third[- ]party(?: fire and theft)?)[- ]only|"
    r"(?:drive|driving|drove|driven) (?:\w+ ){0,2}without (?:\w+ )?insurance|"
    r"(?:find out|know|tell|check) who insures|who insures (?:a|an|that|this|their|his|her|the "
    r"other) (?:car|vehicle|driver)|"
    r"insure (?:a |an |the )?(?:car|vehicle|house|home) (?:for|in|under) "
    r"(?:someone|somebody|another|a friend|my (?:\w+(?:'s)? )?name)|insure (?:someone|somebody) "
    r"else'?s|(?:un)?stack(?:ed|ing) (?:\w+ ){0,2}(?:uninsured|underinsured|um|uim|coverage|cover|"
    r"policies|limits)|"
    r"(?:raise|raises|raising|increase|increases|increasing|hike|hikes) (?:your|my|the|our|his|"
    r"her|their) (?:\w+ )?(?:insurance|premiums?|rates?)\b(?! (?:excess|deductible|cover|"
    r"coverage|limits?|sum))|"
    r"(?:put|place) (?:\w+ ){0,3}(?:insurance|policy|cover|coverage) on hold|"
    r"(?:suspend|pause) (?:my |the |our )?(?:\w+ )?(?:insurance|policy|cover|coverage)|"
    r"do (?:i|we) need (?:a )?(?:building |resource )consent|"
    r"(?:apply|applying|application) for (?:a )?(?:building|resource) consent|"
    # what another scheme or body does: ACC for injuries, the tribunals for disputes
    r"what (?:(?:does|will|would|can|do) )?(?:the )?acc (?:pays?|covers?|do(?:es)?)\b|"
    r"(?:claim|apply) (?:on|from|with|through|to) (?:the )?acc\b|acc levies|"
    r"what (?:does|do|can|will) (?:the )?(?:tenancy|disputes) tribunal\b|"
    # whether insurance is required (by law, a landlord, a lender): not the wording's to say
    r"(?:is|are) (?:\w+ ){0,3}insurance (?:legally )?(?:required|mandatory|compulsory)|"
    r"(?:required|mandatory|compulsory) by (?:law|(?:my |the |a |your )?(?:landlord|lender|bank|"
    r"mortgage)\w*)|(?:can |do |does |will )?(?:my |a |the )?(?:landlords?|lenders?|banks?) "
    r"(?:require|make|force) (?:\w+ ){0,3}(?:insurance|cover)|"
    r"do (?:i|we) (?:legally )?(?:have to|need to) (?:have|get|buy|carry) (?:\w+ ){0,2}insurance|"
    r"do (?:i|we|you|people|students|tenants|renters|landlords|homeowners|drivers|seniors|"
    r"\w+ owners) (?:really |even |still )?need (?:a |an )?(?:\w+ )?insurance\b(?! (?:company|"
    r"provider|insurer)s?)|"
    # insuring the same thing twice: no wording of ours speaks of other insurance
    r"(?:have|get|buy|hold|carry) (?:two|2|multiple|several) (?:\w+ ){0,2}(?:insurance )?"
    r"polic(?:y|ies)|more than one (?:\w+ ){0,2}(?:insurance )?polic(?:y|ies)|"
    # moving a policy to another car or house: a person does it; no clause says how
    r"transfer (?:my |the |our )?(?:\w+ )?(?:insurance|policy|cover|coverage) (?:to|over to|onto)|"
    # what insurance costs to buy: the premium is quoted, never written in a wording
    r"how much (?:does|do|would|will|might|could|should) (?:\w+ ){0,3}(?:insurance|premiums?|"
    r"polic(?:y|ies)) cost|"
    r"how much (?:is|are) (?:\w+ ){0,3}(?:insurance|premiums?)(?: (?:a|per) (?:month|year|week)|"
    r" monthly| yearly|(?=\s*\?)|$)|"
    r"(?:average |typical )?(?:cost|price) of (?:\w+ ){0,2}insurance|"
    # whether a kind of insurance is worth buying: advice, never the wording's to say
    r"(?:is|are) (?:\w+ ){0,3}(?:insurance|cover|coverage|polic(?:y|ies)) (?:really )?worth "
    r"(?:it|the (?:cost|money|price)|having|getting|buying|paying for)|"
    r"(?:is it|would it be) worth (?:getting|buying|having|taking out|paying for) "
    r"(?:\w+ ){0,3}(?:insurance|cover|coverage)|"
    r"(?:insurance|cover|coverage) (?:is |a )?worthwhile|"
    # a document about the policy, which the insurer issues and no clause describes
    r"proof of (?:\w+ )?insurance|certificate of (?:\w+ )?insurance|insurance (?:id )?cards?|"
    r"insurance (?:cost|costs|premiums?) (?:a|per) (?:month|year)"
)
_CLEARLY_OUTSIDE_RE = re.compile(rf"\b(?:{CLEARLY_OUTSIDE})\b")


@functools.cache
def toolkit_words() -> frozenset[str]:
    """The English words the glossary and the outside signs are written in.

    With a wording's own words, what a slip of the keyboard may be read as
    (``claims.agent.spelling``): "windshild" as "windshield", then the glossary's
    "windscreen". Fragments of a pattern ("relocat") are not words and are left out.
    """
    from claims.agent.spelling import english_word

    sources = [*GLOSSARY, *GLOSSARY.values(), *OUTSIDE_SIGNS.values(), CLEARLY_OUTSIDE]
    found = {w for source in sources for w in re.findall(r"[a-z]+", source.lower())}
    return frozenset(w for w in found if english_word(w))


# What building or repair work costs on the market ("how much does it cost to
# replace a roof?") and how to do a job oneself ("how do I get rid of mice?"): no
# wording says. Only when the message names neither the insurance nor a
# payment, since "how much does it cost me to replace my windscreen under my
# policy?" is the excess-free glass benefit.
_PRICE_OF_WORK_RE = re.compile(
    r"\b(?:(?:how much|what) (?:does|do|would|will|might|could|should) (?:it )?"
    r"(?:typically |usually |normally )?cost (?:me |us )?to (?:replace|repair|fix|rebuild|"
    r"build|re-?roof|paint|install|remove|clean|renovate)|cost of (?:replacing|repairing|"
    r"fixing|rebuilding|building|painting|installing|removing) (?:a|an)|"
    r"how (?:do|can|should) (?:i|we) (?:get rid of|kill|trap|unblock|exterminate|fumigate))\b"
)
_NAMES_INSURANCE_RE = re.compile(
    r"\b(?:insur\w*|polic(?:y|ies)|cover\w*|claim\w*|excess|deductible|premiums?|pay|pays|"
    r"paid|northwind|you|your)\b"
)


# Losing one's job: income protection or a mortgage-protection product, never a
# motor, home or contents wording -- unless the customer asks to cancel the policy
# because of it, which the cancellation clause answers.
_JOB_LOSS_RE = re.compile(
    r"\b(?:(?:lose|lost|losing) (?:my|our|his|her|their) (?:jobs?|employment)|"
    r"(?:get|got|been|was|were|am|are|be|being) (?:laid off|made redundant|fired|sacked)|"
    r"unemploy\w*|redundan(?:cy|t))\b"
)
_CANCELS_RE = re.compile(r"\b(?:cancel\w*|refund\w*|stop (?:my|the) (?:policy|insurance|cover))\b")


def _lowered(message: str) -> str:
    """The message as the outside patterns read it: lower case, straight apostrophes."""
    return message.lower().replace("\u2019", "'")


def clearly_outside(message: str) -> bool:
    """Whether the message names a topic that no clause of a wording answers."""
    text = _lowered(message)
    if _CLEARLY_OUTSIDE_RE.search(text):
        return True
    if _JOB_LOSS_RE.search(text) and not _CANCELS_RE.search(text):
        return True
    return bool(_PRICE_OF_WORK_RE.search(text)) and not _NAMES_INSURANCE_RE.search(text)


# The patterns are lower case and read a lower-cased message (faster than
# re.IGNORECASE on long alternations).
_OUTSIDE_COMPILED = {
    name: re.compile(rf"\b(?:{pattern})\b") for name, pattern in OUTSIDE_SIGNS.items()
}


@functools.lru_cache(maxsize=4096)
def outside_signs(message: str) -> tuple[float, ...]:
    """For each of OUTSIDE_SIGNS, in order: 1.0 if the message shows it, else 0.0.

    Memoised: the turn asks twice (the "fits" features and the sure-cosine gate).
    """
    text = _lowered(message)
    return tuple(float(bool(p.search(text))) for p in _OUTSIDE_COMPILED.values())


# --- a question about the policy as a whole ----------------------------------
#
# "What does my car insurance cover?", "What does renters insurance protect
# against?", "What is full coverage?": every word is a word for insurance, for
# cover or for the line's own subject, and none names a peril, an item or a
# situation. Such a question is answered by the line's principal covers, not
# by whichever clause shares a filler word with it (issue 10, item 3).
_WHOLE_POLICY_WORDS = frozenset(
    """a all an and any are as basic by can comprehensive cover coverage coverages covered
    covers do does everything exactly explain for from full general generally get give gives
    i in include included includes including insurance insure insured insures is it kind kinds
    loss losses main me mean means my normally of offer offers on plan plans policies policy
    protect protected protection protects provide provides standard tell that the thing things
    this typical typically under usually what what's whats which will would you your against
    about""".split()
)
# What each line's customers call the thing insured (US and New Zealand words).
LINE_NOUNS: dict[str, frozenset[str]] = {
    "motor": frozenset(
        "car cars auto autos automobile automobiles vehicle vehicles motor ute".split()
    ),
    "home": frozenset(
        "home homes house houses homeowner homeowners homeowner's dwelling building buildings "
        "property".split()
    ),
    "contents": frozenset(
        "contents renter renters renter's tenant tenants tenant's belongings possessions "
        "personal property".split()
    ),
}
_WHOLE_POLICY_ASKS = frozenset(
    """cover coverage coverages covered covers include included includes protect protected
    protection protects mean means""".split()
)
# ...and what it leaves out: "What does my renters insurance not cover?", "What are the
# exclusions?" are answered by the line's exclusion clauses.
_EXCLUSION_NOUNS = frozenset({"exclusion", "exclusions", "exceptions"})  # ask on their own
_WHOLE_POLICY_EXCLUDES = _EXCLUSION_NOUNS | frozenset(
    "not isn't doesn't don't aren't won't excluded exclude excludes except".split()
)


# ...and how to claim on it: "How do I make a claim?", "How do I lodge a claim?",
# "When to file a claim for auto insurance?", "What is the claims process?" are
# answered by the line's claims clause. Left to the classifier, such a short
# question without a line's noun looked like the other kinds of insurance's
# "how do I claim ..." and was refused (2026-12-03: "How do I make a claim?" on
# the home and contents policies).
_CLAIM_NOUNS = frozenset("claim claims claiming".split())
_CLAIM_ASKS = frozenset(
    """how when where process procedure procedures steps make making file filing lodge
    lodging submit submitting start starting put raise""".split()
)
_CLAIM_PROCESS_WORDS = (
    _CLAIM_NOUNS
    | _CLAIM_ASKS
    | frozenset(
        """a an the i we to do does is are what what's whats it my our on for with under in
        insurance policy northwind you your me can should need new go through work works
        online this first""".split()
    )
)


# "Someone broke in and took the TV, what do I do to claim?": asks how to claim on
# this policy, whatever else it tells. The line's claims clause answers that part;
# the classifier, which had learnt "how do I claim" from other kinds of insurance
# ("how do I claim life insurance?"), refused the whole message.
_HOW_TO_CLAIM_RE = re.compile(
    r"\bhow (?:do|can|should|would|must) (?:i|we) (?:go about )?(?:make|making|file|filing|"
    r"lodge|lodging|put in|putting in|start|starting|submit|submitting|raise)? ?"
    r"(?:a |the |my |our )?claim\b"
    r"|\bwhat (?:do|should|must) (?:i|we) (?:need to |have to )?do (?:to|in order to|now to) "
    r"(?:make |file |lodge |put in |start )?(?:a |the |my |our )?claim\b"
    r"|\bhow to (?:make |file |lodge |put in |start |submit )?(?:a |the )?claim\b"
)


def asks_how_to_claim(message: str) -> bool:
    """Whether the message asks how to make a claim ("what do I do to claim?")."""
    return bool(_HOW_TO_CLAIM_RE.search(_lowered(message)))


_OBJECT_WORDS = frozenset("things stuff items belongings gear possessions".split())
_PLACE_NOUN = re.compile(
    r"\b(?:in|inside|from|at) (?:my |the |our )?(\w+)\b(?! (?:insurance|polic\w*|cover(?:age)?)\b)"
)


def whole_policy_question(message: str, line: str) -> str | None:
    """``"cover"``, ``"exclusion"`` or ``"claims"`` for a question about the line's
    policy as a whole.

    Every word must be a word for insurance or cover, a function word, or the
    line's own noun (a motor policy's "car", not "renters"), and one of them must
    ask what is covered or meant ("what can I claim on it?" asks it too). With a
    negation or "exclusions" it asks what is left out. A question made only of
    words for claiming ("how do I lodge a claim?") asks how to claim. "Does
    renters insurance cover my roommate?" and "how much car insurance do I
    need?" are none of these.
    """
    nouns = LINE_NOUNS.get(line)
    if not nouns:
        return None
    found = set(words(message))
    if found & _CLAIM_NOUNS and found & _CLAIM_ASKS and found <= _CLAIM_PROCESS_WORDS | nouns:
        return "claims"
    # "Are things in my car covered?" asks about what is inside the car (belongings),
    # not about the car insurance ("what is covered in my car insurance?", "what's
    # covered in my home?").
    if found & _OBJECT_WORDS and any(
        m.group(1) in nouns for m in _PLACE_NOUN.finditer(message.lower())
    ):
        return None
    asks = found & _WHOLE_POLICY_ASKS or ({"what", "can", "claim"} <= found)
    excludes = found & _WHOLE_POLICY_EXCLUDES
    if not (asks or excludes & _EXCLUSION_NOUNS):
        return None
    if not found - {"claim"} - excludes <= (_WHOLE_POLICY_WORDS | nouns):
        return None
    return "exclusion" if excludes else "cover"
