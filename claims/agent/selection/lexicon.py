"""How New Zealand customers say it, and how the wording says it.

A small glossary of customer words (slang, US terms, brand names) with the
wording's words for the same thing. The selector appends the wording's words
to the message before ranking, so BM25 can match them and the embedding is
pulled towards the wording's vocabulary; the customer's words stay in.
This is domain knowledge, not a list of test questions: each entry is a
general term an insurer's contact centre hears, kept line-neutral.
"""

from __future__ import annotations

import re

# customer phrase (regex, word-bounded, lower case) -> the wording's words
GLOSSARY: dict[str, str] = {
    # money and settlement
    r"deductibles?": "excess",
    r"total(?:l)?ed|write[- ]?off|written off": "total loss write-off",
    r"payout|pay out": "settle pay",
    r"refund(?:ed)?": "refund cancel",
    # theft and damage
    r"nicked|pinched|swiped|knicked|ripped off": "stolen theft",
    r"burgl(?:ed|ary|ar|ars)|broken into|break[- ]?in|broke into": "burglary theft break-in",
    r"keyed|tagged|graffiti": "vandalism malicious damage",
    r"fender[- ]bender|prang(?:ed)?|rear[- ]ended|smash(?:ed)? into": "accident collision",
    r"wrecked|trashed": "damaged",
    r"stopped working|broke down|broken down|packed up|conked out|died|not working": (
        "breakdown mechanical breakdown"
    ),
    r"spilt|spilled|dropped": "accidental damage",
    r"seiz(?:e|ed|ure)|confiscat(?:e|ed)": "police illegal activity",
    r"cops?": "police",
    # vehicles and driving
    r"windshield": "windscreen",
    r"rental|loan car|courtesy car|rent a car": "hire car alternative transport",
    r"tow truck|towed": "towing",
    r"panel ?beaters?|mechanics?|body shop": "repairer repairs",
    r"wof|warrant of fitness|rego|registration": "roadworthy registered warrant of fitness",
    r"beers?|drunk|drink(?:ing)?|booze|over the limit": "alcohol drugs impaired",
    r"learners?|restricted licen[cs]e": "learner licence drivers",
    r"mags|lowered|modded|modifications?": "modifications tell us",
    r"uber|ola|doordash|uber eats": "uber delivery business use",
    r"interislander|bluebridge|ferry": "ferry new zealand travel",
    r"motel|hotel|airbnb stay": "accommodation",
    # home and contents
    r"bach|crib|holiday home": "holiday home",
    r"reno(?:vation)?s?|extension|renovating": "building work alterations",
    r"builder|tradie": "building work",
    r"rubble|debris|mess": "debris removal",
    r"unliveable|unlivable|can'?t live in": "uninhabitable temporary accommodation",
    r"sunnies|sunglasses|handbag|backpack|gym bag|wallet": "personal belongings",
    r"ring|necklace|bracelet|earrings": "jewellery",
    r"telly": "tv",
    r"ps5|xbox|playstation|console": "electronics",
    r"e-?bikes?|scooters?": "bike",
    r"uni hall|hall of residence|dorm|boarding school|storage unit": "away from home",
    r"work laptop|employer'?s?|company laptop": "business equipment",
    r"fitted carpets?|built[- ]in|fixtures": "fixtures what we mean by your home contents",
}
_COMPILED = [(re.compile(rf"\b(?:{k})\b", re.IGNORECASE), v) for k, v in GLOSSARY.items()]


def glossary_terms(message: str) -> list[str]:
    """The wording's words for the customer words found in ``message``."""
    return [words for pattern, words in _COMPILED if pattern.search(message)]


def expand(message: str) -> str:
    """``message`` followed by the wording's words for what it says, if any."""
    terms = glossary_terms(message)
    return f"{message} ({'; '.join(terms)})" if terms else message
