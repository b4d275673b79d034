"""Messages a person must handle whatever the wording says: complaints, and
requests to speak to a person.

New Zealand's Fair Insurance Code asks insurers to acknowledge and handle a
complaint on a clock, so a complaint is never answered from a clause: it is
queued with its own reason and the queue's shortest deadline. The patterns
are deliberately narrow (a question about what the policy covers is not a
complaint because it says "unhappy").
"""

from __future__ import annotations

import re
from typing import Any

from claims.agent.types import CustomerIntent

_COMPLAINT = [
    r"\b(?:make|making|lodge|lodging|file|filing|raise|raising|register|submit|put in|have)"
    r" (?:a |an )?(?:formal |official )?complaint\b",
    r"\b(?:I(?:'d| would)?|and(?: would)?|so) (?:like|want|wish) to complain\b",
    r"\bI(?:'m| am) (?:complaining|going to complain)\b",
    r"\bthis is a (?:formal )?complaint\b",
    r"\bcomplain(?:t)? (?:about|regarding|against) (?:you|your|the way|how|my claim|the claim)\b",
    r"\b(?:insurance (?:and financial services )?ombudsman|IFSO|disputes? resolution scheme)\b",
]
_WANTS_PERSON = [
    r"\b(?:speak|talk|chat) (?:to|with) (?:a |an |some )?(?:real |actual |live )?"
    r"(?:person|human|people|agent|staff(?: member)?|someone|somebody|manager|supervisor)\b",
    r"\b(?:real|actual|live) (?:person|human)\b",
    r"\b(?:human|person|agent|operator) please\b",
    r"\b(?:please )?call me(?: back)?\b",
    r"\b(?:can|could) (?:someone|somebody|a person) (?:call|phone|ring|contact) me\b",
    r"\bnot (?:a |an )?(?:bot|robot|machine|chatbot|AI)\b",
]
COMPLAINT_RE = [re.compile(p, re.IGNORECASE) for p in _COMPLAINT]
WANTS_PERSON_RE = [re.compile(p, re.IGNORECASE) for p in _WANTS_PERSON]


def customer_intent(message: str) -> CustomerIntent | None:
    """``complaint``, ``wants_person``, or None for an ordinary question."""
    if any(p.search(message) for p in COMPLAINT_RE):
        return CustomerIntent.COMPLAINT
    if any(p.search(message) for p in WANTS_PERSON_RE):
        return CustomerIntent.WANTS_PERSON
    return None


# --- requests for a decision on the customer's own claim ----------------------
#
# A decision request asks Northwind to judge or commit on one event or claim:
# who is at fault, whether a decline, settlement or amount was right, whether
# the insurer should waive an excess, whether *this* claim or *this* event
# (told in the past tense, or dated) will be accepted, paid or covered. It is
# queued as ``needs_decision`` (the reply may still quote what the wording
# says on the topic). A general question -- "is my car covered if it is
# stolen?", "can an insurer decline a claim?", "how is fault decided?",
# "what if I'm at fault?" -- is answered from the wording instead.
#
# The rules are written from how people ask, not from a tuning set; they are
# measured on the synthetic examples in knowledge/content/decisions/ (held-out
# part) and for false hits on every real question and inventory question
# (``python manage.py evaluate_intents``; docs/evaluation.md).

_SUBJ = (
    r"(?:you|u|ya|they|northwind|(?:the |my |our |their |your )?(?:insurer|insurers|insurance"
    r"(?: company| provider| co)?|(?:\w+ )?(?:insurance|policy|insurer)|adjuster|assessor|loss"
    r" adjuster|appraiser)|the other (?:driver|party|side)(?:'s insurer|'s insurance)?|(?:he|she))"
)
_OUTCOME_VERB = (
    r"(?:decline|declined|deny|denied|refuse|refused|reject|rejected|reduce|reduced|cancel|"
    r"cancelled|canceled|drop|dropped|total|totaled|totalled|write off|wrote off|written off|"
    r"lowball|lowballed|turn down|turned down|only pay|only paid|not pay)"
)
# What a customer wants to make the insurer do: "can I make them fix it / pay the rest?".
_FORCED = (
    r"(?:fix|repair|pay|cover|reconsider|change|increase|replace|refund|reimburse|settle|"
    r"accept|approve)"
)
# What a decision about a claim is made on: "deny my claim", "total my car".
_CLAIM_THING = (
    r"(?:\w+ )?(?:claim|claims|payout|pay-out|settlement|car|vehicle|house|home|policy|cover|"
    r"excess|deductible|contents|belongings)\b"
)
# Words that say a decision about a claim has been or is being made.
_DECISION_CONTEXT = re.compile(
    r"\b(?:declin\w*|den(?:y|ied|ial)|refus\w*|reject\w*|turned down|offer\w*|settle\w*|"
    r"pay ?out|paid|valu\w+|written off|write[- ]?off|wrote off|totall?ed|assessor|adjuster|"
    r"excess|deductible|reduc\w+|cancel\w*|charg\w+|estimate|claim|decision|blam\w*|fault|"
    r"liab\w*|responsib\w*|quot\w*|pay(?:ing)? (?:me|us)|void\w*|lied|fraud\w*|arson|"
    r"(?:won'?t|will not|refuses? to) (?:pay|cover)|partly|partially|"
    r"only (?:pa\w+|covered|offer\w*|approv\w*)|total loss"
    r"|dropped (?:me|us)|(?:pending|waiting|outstanding)"
    r"|(?:insurer|insurance(?: company)?|adjuster|assessor|they|you)"
    r" (?:says?|said|told|reckons?))\b",
    re.IGNORECASE,
)
# A specific past event of the customer's: dated, or told in the past tense.
_PAST_EVENT = re.compile(
    r"\b(?:yesterday|this arvo|last (?:night|week|weekend|month|year|monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday)|this (?:morning|afternoon|evening|week)|earlier today|"
    r"tonight|"
    r"on (?:the )?(?:weekend|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"(?:\d+|a|an|two|three|few|couple of) (?:hours?|days?|weeks?|months?) ago|the other "
    r"(?:day|night))\b"
    r"|\b(?:i|we|(?:my|our)(?: [\w']+){1,2}|someone|somebody|he|she|they|the other (?:driver|"
    r"guy|car|party|person|bloke|vehicle|motorist)|a (?:guy|car|driver|truck|van|bus|ute))"
    r" (?:just |accidentally |then )?(?:was|were|got|crashed|hit|broke|smashed|stole|flooded|"
    r"burst|backed|reversed|rear[- ]?ended|dented|cracked|dropped|spilt|spilled|fell|blew|"
    r"caught|burned|burnt|damaged|scratched|keyed|lost|ran|collided|slid|skidded|did|caused|"
    r"happened|occurred|came|went|scraped|clipped|nudged|bumped|knocked|leaked)\b"
    # "the tree that fell on my fence", "the pipe that burst last night"
    r"|\b(?:that|which|who) (?:just )?(?:fell|crashed|hit|broke|burst|flooded|leaked|collapsed|"
    r"caught fire|burned|burnt|blew|was (?:stolen|damaged|broken|destroyed|hit)|got (?:stolen|"
    r"damaged|broken|destroyed|hit))\b",
    re.IGNORECASE,
)
# The question is about a case ("if I'm at fault", "when the excess is waived").
_HYPOTHETICAL_BEFORE = re.compile(r"\b(?:if|when|whenever|unless|in case)\b[^,;:]*$", re.I)
_HYPOTHETICAL_AFTER = re.compile(r"^[^,;:]*\b(?:if|in case)\b", re.I)
# "Can you tell me if my claim will go through?": an "if" that asks, not one that supposes.
_INDIRECT_IF = re.compile(
    r"\b(?:tell (?:me|us)|let (?:me|us) know|know|wonder(?:ing)?|ask(?:ing)?|find out|see|"
    r"check|sure|idea) if\b",
    re.I,
)
_PROCESS = re.compile(
    r"^\W*how\b[^?]*\b(?:decide|decided|determine|determined|work out|worked out|establish|"
    r"assess|assessed|figure out)\b",
    re.IGNORECASE,
)

# (name, pattern, what must also hold)
#   "any": the pattern alone; "not_if_before": not inside an "if/when" clause;
#   "not_if": neither inside nor followed by one; "context": a decision word in
#   the message; "event": a specific past event in the message, and no "if".
_DECISION_RULES: list[tuple[str, str, str]] = [
    # fault and blame: always a judgement on an event
    (
        "fault",
        r"\bwho(?:'s| is| was| will be| would be| should be)? (?:at |to )?(?:fault|blame)\b"
        r"|\bwhose (?:fault|blame)\b"
        r"|\b(?:is|was|isn't|wasn't) (?:it|this|that|he|she|the other \w+) (?:\w+ )?(?:my|our|"
        r"his|her|their|your) fault\b"
        r"|\b(?:am i|was i|are we|were we|is (?:he|she|it|the other \w+)|was (?:he|she|it|the"
        r" other \w+)) (?:\w+ )?(?:at[- ]fault|to blame)\b"
        r"|\b\d+ ?(?:%|percent) (?:at )?fault\b|\bhow much of the (?:blame|fault)\b"
        r"|\b(?:\d+ ?/ ?\d+|fifty[- ]fifty|split|shared) (?:fault|blame|liability)\b"
        r"|\b(?:blame|fault) is (?:mine|ours|theirs|his|hers)\b"
        r"|\b(?:is|was) (?:it|this|that) on (?:me|us)\b"
        r"|\b(?:put|pin|blame) (?:the |this |that )?(?:accident|crash|collision|blame|it|this|that)"
        r" on (?:me|us)\b",
        "any",
    ),
    # "...can it be my fault?": fault named as what is asked, not as a case
    (
        "fault_named",
        r"\b(?:my|our|his|her|their|your) fault\b"
        r"|\b(?:considered|deemed|found|held|declared|ruled|judged) (?:\w+ )?(?:at[- ]fault|"
        r"to blame)\b",
        "not_if_before",
    ),
    (
        "liable",
        r"\bwho(?:'s| is| was| will be| would be| should be)? (?:liable|responsible)\b"
        r"|\bwhose insurance (?:pays|should pay|has to pay|covers|is responsible)\b"
        r"|\b(?:am i|was i|are we|were we|is (?:he|she|the other \w+)|was (?:he|she|the other"
        r" \w+)|hold (?:me|us)|holding (?:me|us)) (?:\w+ )?(?:liable|responsible)\b",
        "not_if",
    ),
    # was a decision about the claim right
    (
        "decision_fair",
        r"\b(?:was|is|were|are) (?:the|this|that|my|their|your|its|our) (?:\w+'s |\w+ ){0,2}"
        r"(?:decline|denial|decision|settlement|offer|payout|pay-out|assessment|valuation|"
        r"estimate|refusal|rejection|amount|write-off)s?\b[^.?!]{0,60}\b(?:fair|justified|"
        r"right|correct|reasonable|legal|allowed|enough|wrong|too low|final)\b"
        r"|\b(?:decline|denial|decision|settlement|offer|valuation|payout|assessment)\b"
        r"[^.?!]{0,40}\b(?:was|is) (?:wrong|unfair|incorrect|unjustified|too low)\b"
        r"|\b(?:my|our|the|this) (?:\w+ )?claim (?:was |been |being )?(?:declined|denied|refused|"
        r"rejected|reduced|settled|assessed)\b[^.?!]{0,20}\b(?:fairly|correctly|rightly|lawfully|"
        r"properly|unfairly|wrongly)\b"
        # "the insurance company says my car is not a total loss but it should be": the
        # customer disputes an assessment of their own claim
        r"|\b(?:you|they|insurer|insurance(?: company)?|adjuster|assessor|northwind|company)"
        r" (?:says|said|claims?|claimed|decided|insists?|told (?:me|us))\b[^.?!]{0,60}\bbut"
        r" (?:it|i|we|it's|that's)(?: really)? (?:should|shouldn't|wasn't|isn't|is|was|think|"
        r"believe|disagree)\b"
        # "the adjuster says my roof damage is old, but the storm caused it"
        r"|\b(?:adjuster|assessor|insurer|insurance company) (?:says|said|claims?|claimed|"
        r"insists?|decided|told (?:me|us))\b[^.?!]{0,60}\bbut (?:the|it|this|that|my|our)\b"
        r"[^.?!]{0,30}\b(?:caused|did|was|is|happened|came|started|wasn't|isn't)\b",
        "any",
    ),
    (
        "is_that_fair",
        r"\b(?:is|was|isn't|wasn't) (?:it|that|this) (?:really |even )?(?:a |an |the )?(?:fair|"
        r"unfair|right|wrong|justified|legal|reasonable|correct|allowed|ok|okay)\b"
        rf"|\b(?:did|does|has|have) {_SUBJ} (?:get|got|gotten) (?:it|this|that|the \w+) (?:right|"
        r"wrong)\b"
        r"|\b(?:is|was) (?:that|this|it) all (?:i'm|i am|we're|we are|i|we) (?:getting|get|owed)\b"
        rf"|\bcan (?:i|we) (?:make|force|get|ask) (?:them|you|him|her|the \w+) (?:to )?"
        rf"{_FORCED}\b"
        rf"|\b(?:were|was|is|are) {_SUBJ} (?:right|wrong|correct|justified|allowed|entitled)\b"
        r"|\bcan (?:they|you) (?:do|even do|really do) (?:that|this)\b|\bfair enough\?"
        # "...the adjuster only approved 3000, who do I believe?"
        r"|\bwho (?:do|should) (?:i|we) (?:believe|trust|listen to)\b|\bwho(?:'s| is) right\b"
        # "my claim has been pending for three months, can they just ignore me?"
        rf"|\b(?:can|could|may) {_SUBJ} (?:just |really |legally )?(?:ignore|stall|delay|drag out|"
        r"keep (?:me|us) waiting|sit on)\b"
        # "...only paid half of the repair bill, can I get the rest?"
        r"|\b(?:can|could|how (?:can|do)) (?:i|we) (?:get|claim|recover|be paid) (?:back )?(?:the"
        r" rest|the remainder|the balance|the other half)\b"
        r"|\b(?:is|was) (?:that|this|it) (?:really )?(?:normal|standard practice|usual)\s*\?"
        r"|\b(?:reconsider|re-?assess|look (?:at (?:it|my claim) )?again)\b"
        r"|\b(?:overrul\w*|overturn\w*|override|reverse (?:the|that|this|his|her|your|their)"
        r" decision|change (?:the|that|this|your|their) (?:decision|mind))\b",
        "context",
    ),
    (
        "held_responsible",
        r"\bhold(?:ing)? (?:me|us) (?:\w+ )?(?:liable|responsible) for (?:the|this|that|my|our|"
        r"it)\b"
        r"|\b(?:am i|are we|was i|were we) (?:\w+ )?(?:liable|responsible) for (?:the|this|that|"
        r"his|her|their|it)\b"
        rf"|\b(?:is|are|isn't|aren't) {_SUBJ} (?:supposed|meant|required|obliged|obligated) to"
        r" (?:pay|cover|waive|refund|reimburse)\b"
        r"|\b(?:i|we) (?:shouldn't|should not|should) (?:have to |need to )?(?:pay|be charged)\b"
        r"[^.?!]{0,20}\b(?:excess|deductible)\b"
        # "can I make my insurance company replace my phone?": forcing an outcome on a claim
        rf"|\b(?:can|could|how (?:can|do)) (?:i|we) (?:make|force|get|ask) {_SUBJ} (?:to )?"
        rf"{_FORCED}\b",
        "any",
    ),
    # "does my insurance have to pay for the tree that fell on the fence?": an obligation on
    # one event of the customer's
    (
        "have_to",
        rf"\b(?:does|do|will|would|is|are) {_SUBJ} (?:really |still |legally )?(?:have to|need to|"
        r"required to|obliged to|obligated to|going to have to) (?:pay|cover|replace|refund|"
        r"reimburse|fix|repair)\b",
        "event",
    ),
    # "do I have to accept their offer?", "...half my fault. Do I have to agree?"
    (
        "must_accept",
        r"\b(?:do|must|should) (?:i|we) (?:have to |need to )?(?:accept|agree(?: to| with)?)"
        r"(?: (?:it|that|this|them)\b| (?:the|their|your|his|her|this|that) (?:\w+'s )?(?:\w+ )?"
        r"(?:offer|estimate|settlement|valuation|payout|pay-?out|decision|amount|assessment|"
        r"figure|number)\b|\s*\?)",
        "context",
    ),
    # "they turned my claim down, should I challenge it?"; "can I dispute that?": whether to
    # contest a decision on their claim ("how do I dispute a decision?" is the process)
    (
        "contest",
        r"\bshould (?:i|we) (?:\w+ )?(?:challenge|dispute|contest|fight|appeal|argue|push back)\b"
        r"|\b(?:can|could) (?:i|we) (?:\w+ )?(?:challenge|dispute|contest|fight|appeal|argue"
        r" (?:with|against))\b (?:it|this|that|them|(?:the|their|your|my|our) (?:\w+ ){0,2}"
        r"(?:decision|denial|decline|offer|valuation|assessment|payout|settlement|estimate|"
        r"claim))\b"
        # "...says the damage was there before. How do I prove them wrong?"
        r"|\bprove (?:them|you|him|her|it|the \w+|my \w+(?: company)?) wrong\b"
        # "can I sue my insurance company for denying my claim?"
        rf"|\b(?:can|could|should) (?:i|we) (?:\w+ )?(?:sue|take) {_SUBJ}(?: to court)?\b",
        "context",
    ),
    # "is the adjuster lowballing me?"; "should I hold out for more than you offered?"
    (
        "offer_too_low",
        rf"\b(?:is|are|was|were|has|have) {_SUBJ} (?:\w+ )?low-?ball\w*"
        r"|\blow-?ball(?:ed|ing)? (?:me|us|my|our)\b"
        r"|\bmore\b[^.?!]{0,25}\bthan (?:what )?(?:they|you|u|northwind|(?:the|my|our) (?:\w+ )?"
        r"(?:adjuster|assessor|insurer|insurance company|insurance))(?:'ve| have| had)? "
        r"(?:offered|valued|quoted|proposed|assessed|put)\b"
        r"|\b(?:hold out|push|ask|argue|fight|negotiate|hold firm) for (?:a )?(?:more|higher|"
        r"bigger)\b"
        # "they totaled my car but offered too little"
        r"|\b(?:offered|offering) (?:me |us )?(?:(?:far|way|much|a lot) )?(?:too little|too low|"
        r"not enough|so little|less than (?:it'?s|it is|it was) worth)\b"
        # "the adjuster valued my car at 4000 but it is worth 7000"
        r"|\b(?:valued|offered|assessed|priced|put)\b[^.?!]{0,40}\bbut (?:it|it's|it is|it was|"
        r"the car|my car|the \w+|they|we|i)\b[^.?!]{0,25}\bworth\b"
        # "why did you only offer half the value of my TV?"
        r"|\b(?:why (?:did|have|has|had)|how come(?: (?:did|have|has|had))?) "
        rf"{_SUBJ} only (?:offer|offered|pay|paid|give|given|valued?|put)\b",
        "any",
    ),
    # "can they refuse to pay because I ...": a judgement on the customer's own circumstances
    (
        "refuse_because",
        rf"\b(?:can|could|may|will|would) {_SUBJ} (?:be )?(?:allowed to |legally |just |really )?"
        rf"{_OUTCOME_VERB}\b[^.?!]{{0,25}}\b(?:because|since|as|just because) (?:i|we|my|our)\b",
        "any",
    ),
    # "are you paying for the new roof or not?"; "am I entitled to more for my car?"
    (
        "or_not",
        rf"\b(?:are|will|is|do|does|would) {_SUBJ} (?:\w+ ){{0,3}}(?:pay|paying|cover|covering)\b"
        r"[^.?!]{0,60}\bor not\b"
        r"|\b(?:am|are) (?:i|we) (?:not )?entitled to (?:more|a bigger|a higher|the full|full|"
        r"extra)\b"
        r"|\b(?:do|don't) (?:i|we) deserve (?:more|a bigger|a higher|the full|full)\b",
        "any",
    ),
    # "a truck backed into me yesterday, do I have to pay my deductible?"
    (
        "pay_excess",
        r"\b(?:do|will|would|am|are|must|should) (?:i|we) (?:still )?(?:have to|need to|"
        r"going to have to|be charged|be paying|pay)\b[^.?!]{0,15}\b(?:excess|deductible)\b",
        "event",
    ),
    (
        "who_pays",
        r"\bwho (?:should |has to |will |is going to |needs to |must )?pays? (?:for )?(?:the|this|"
        r"that|my|our|it)\b"
        r"|\bhow much (?:will|would|do|does|am) (?:i|we) (?:have to |need to |going to )?"
        r"(?:pay|owe)\b",
        "event",
    ),
    (
        "may_they",
        rf"\b(?:can|could|may|will|would) {_SUBJ} (?:be )?(?:allowed to |legally |just |really"
        rf" )?{_OUTCOME_VERB}\b[^.?!]{{0,25}}\b(?:my|our) {_CLAIM_THING}"
        rf"|\b(?:is|are) {_SUBJ} (?:allowed|entitled|able|right) to {_OUTCOME_VERB}\b"
        rf"[^.?!]{{0,25}}\b(?:my|our) {_CLAIM_THING}"
        rf"|\b(?:did|does|do) {_SUBJ} have (?:the |a |any )?(?:right|grounds|reason|basis) to\b"
        rf"|\b(?:is|are|was|were) {_SUBJ} (?:right|wrong|correct) to\b"
        rf"|\bwhy (?:did|was|were|has|have|would|is) (?:{_SUBJ}|my (?:\w+ )?claim|the claim|"
        rf"my (?:\w+ )?\w+)\b[^.?!]{{0,30}}\b(?:declin\w*|den(?:y|ied)|reject\w*|refus\w*|"
        rf"turned down|reduc\w*|total\w*|written off|wrote off|only (?:pa|offer)\w+)",
        "any",
    ),
    # "can they refuse to pay me?": a refusal of the customer's own payout
    (
        "refuse_me",
        rf"\b(?:can|could|may|will|would) {_SUBJ} (?:be allowed to |legally |just |really )?"
        r"(?:refuse|decline|deny|reject|stop|get out of)(?: to)? pay(?:ing)?"
        r" (?:me|us|out to me|my)\b",
        "any",
    ),
    # "is my insurance company responsible for the rental car bill after my crash last week?"
    (
        "responsible_event",
        rf"\b(?:is|are|was|were) {_SUBJ} (?:\w+ )?(?:liable|responsible) for\b",
        "event",
    ),
    # should they pay, waive, refund
    (
        "should_they",
        rf"\bshould(?:n't| not)? (?:{_SUBJ}|the other (?:driver|party)"
        r"(?:'s insurer|'s insurance)?)\b"
        r"[^.?!]{0,40}\b(?:waive|pay|paying|cover|accept|approve|refund|total|decline|deny|"
        r"reduce|reimburse|settle)\b"
        r"|\bshould (?:my|our|the) (?:excess|deductible|claim|payout) be\b"
        r"|\bshould(?:n't| not) (?:i|we) (?:have to |be made to |really )?(?:pay|be charged|"
        r"be paid|get|receive)\b[^.?!]{0,30}\b(?:excess|deductible|full|more|extra|whole)\b"
        r"|\bshould (?:i|we) (?:still |really )?(?:have to|be made to|be charged)\b[^.?!]{0,30}"
        r"\b(?:excess|deductible|full|more|extra|whole)\b"
        r"|\bshould (?:i|we) (?:get|receive|be paid) (?:more|the full|full|extra|the whole)\b"
        r"|\bshould (?:pay|cover|refund|waive) (?:my|our) (?:excess|deductible)\b"
        r"|\bwaive\w* (?:my|our|this) (?:excess|deductible)\b"
        r"|\b(?:can|could|will|would|should) (?:you|they|u)(?: guys)? waive\b",
        "not_if_before",
    ),
    # will this claim be accepted or paid
    (
        "claim_outcome",
        r"\b(?:(?:my|our|this|that) (?:\w+ ){0,2}claim|the claim (?:for|on|about) (?:my|our))\b"
        r"[^.?!]{0,50}\b(?:be |get |being |been |is |"
        r"going to be )(?:accepted|approved|paid|covered|declined|denied|rejected|successful|"
        r"honou?red)\b"
        r"|\b(?:my|our|this|that) (?:\w+ ){0,2}claim\b[^.?!]{0,50}?(?:will|would|'ll|is going to|"
        r"might|could) (?:go through|succeed|work out|be ok)\b"
        # a bonus, on the customer's own crash: "will I lose my no-claims bonus for this crash?"
        r"|\b(?:lose|losing|lost|keep|affect\w*|hit|drop|go down|protect\w*)\b[^.?!]{0,30}"
        r"\bno[- ]claims? (?:bonus|discount)\b[^.?!]{0,40}\b(?:this|that|the|my|our) "
        r"(?:crash|accident|claim|prang|smash|bump)"
        r"|\bno[- ]claims? (?:bonus|discount)\b[^.?!]{0,20}\b(?:be )?(?:affected|lost|hit|go down|"
        r"drop)\b[^.?!]{0,30}\b(?:this|that|the|my|our) (?:crash|accident|claim|prang|smash|bump)"
        r"|\b(?:is|will|would) (?:my|our|this|that) (?:\w+ ){0,2}claim\b[^.?!]{0,30}\b(?:valid|"
        r"successful|go through|succeed|be ok)\b"
        r"|\b(?:does|will|would) (?:my|our|this|that) (?:\w+ ){0,2}claim\b[^.?!]{0,30}\b(?:qualify|"
        r"count|go through|succeed)\b"
        r"|\b(?:approve|accept|pay|pay out|honou?r) (?:my|our|this) (?:\w+ )?claim\b"
        r"|\b(?:do|would|will) (?:i|we) (?:have|get) (?:a|any) (?:claim|case)\b"
        r"|\bdo (?:i|we) have a case\b"
        r"|\b(?:is it|is this|would it be) worth (?:making |lodging |filing |putting in )?(?:a )?"
        r"claim\w*\b|\bworth (?:making|lodging|filing|putting in) a claim\b"
        r"|\bshould (?:i|we) (?:make|lodge|file|put in|go ahead with) (?:a|the|this) claim\b"
        r"|\bshould (?:i|we) (?:accept|take|agree to|sign for) (?:the|their|your|this|that|his|her)"
        r" (?:\w+ ){0,2}(?:settlement|offer|payout|pay-?out|estimate|valuation|amount|cheque)\b"
        r"|\bshould (?:i|we) (?:accept|take) (?:it|that|this|their offer|the money)\b"
        r"|\b(?:am|are) (?:i|we) going to (?:get|be) (?:paid|covered|my money|our money|"
        r"reimbursed|compensated)\b",
        "not_if_before",
    ),
    # will this event (dated, or told in the past tense) be covered or paid
    (
        "event_covered",
        r"\b(?:will|would|am|are|is|does|do|did|can|could)\b[^.?!]{0,50}\b(?:covered|cover "
        r"(?:it|this|that|them|the|for|my|our)|pay (?:for|to|out|me|us|it)|pay(?=\s*\?)|"
        r"paid(?: out)?|"
        r"compensated|reimbursed|count(?:s)? as|qualif(?:y|ies)|claimable|claim (?:for )?"
        r"(?:it|this|that))\b"
        r"|\bcan (?:i|we) (?:still )?(?:make a |lodge a |put in a |file a )?claim (?:for |on )?"
        r"(?:this|it|that)\b",
        "event",
    ),
]
DECISION_RE = [(name, re.compile(p, re.IGNORECASE), need) for name, p, need in _DECISION_RULES]
# An insurer in general ("an insurance company", "an adjuster"): the question is about how
# insurers behave, not about the customer's own offer.
_ANY_INSURER = re.compile(
    r"\b(?:an|any) (?:insurance company|insurer|insurance provider|adjuster|assessor)\b", re.I
)
_SENTENCE_RE = re.compile(r"[^.?!\n]+[.?!]*")


def _hypothetical(sentence: str, start: int, end: int, *, after: bool) -> bool:
    if _HYPOTHETICAL_BEFORE.search(_INDIRECT_IF.sub(" ", sentence[:start])):
        return True
    return after and bool(_HYPOTHETICAL_AFTER.search(sentence[end:]))


_QUESTION_START = re.compile(
    r"^\W*(?:who|whose|what|which|why|how|is|isn't|was|wasn't|are|am|were|will|would|can|"
    r"could|should|shouldn't|does|do|did|has|have)\b",
    re.IGNORECASE,
)


def _is_question(sentence: str, sentences: list[str]) -> bool:
    """Asked, not told: ends with "?", or (unpunctuated) opens like a question."""
    stripped = sentence.strip()
    if stripped.endswith("?"):
        return True
    return not stripped.endswith((".", "!")) and bool(_QUESTION_START.search(stripped))


def decision_rule(message: str) -> str | None:
    """The name of the first decision rule the message meets, or None."""
    text = message.replace("\u2019", "'")
    sentences = _SENTENCE_RE.findall(text)
    past = bool(_PAST_EVENT.search(text))
    context = bool(_DECISION_CONTEXT.search(text))
    for name, pattern, need in DECISION_RE:
        for sentence in sentences:
            if name in ("fault", "fault_named", "liable") and (
                _PROCESS.search(sentence) or not _is_question(sentence, sentences)
            ):
                # "how do you decide who is at fault?"; "totally their fault." told,
                # not asked
                continue
            if _ANY_INSURER.search(sentence):
                # about insurers in general, not one's own claim: "do I need to accept the
                # first offer from an insurance company?"
                continue
            for m in pattern.finditer(sentence):
                if need == "context" and not context:
                    continue
                if need == "event" and not (past and sentence.rstrip().endswith("?")):
                    continue
                if need in ("not_if_before", "not_if", "event") and _hypothetical(
                    sentence, m.start(), m.end(), after=need != "not_if_before"
                ):
                    continue
                return name
    return None


# Asks us to commit (the seed's rule): "will you pay for my rental?",
# "confirm you will pay", "guarantee it".
_COMMIT = re.compile(
    r"\b(will|would|are|can) (you|northwind|u|ya|they) (guys )?(definitely |actually )?"
    r"(pay|cover|approve|accept|refund|reimburse|settle|going to pay) (for )?"
    r"(my|our|this|that|it|me|us)\b"
    r"|\bconfirm (that )?(you|northwind|u)\b"
    r"|\b(confirm|assure|tell) me\b[^.?!]*"
    r"\b(pay|paid|cover|covered|approve|approved|accept|accepted)\b"
    r"|\bconfirm\b[^.?!]*\b(claim|payment)\b"
    r"|\bguarantee\b|\bpromise\b",
    re.IGNORECASE,
)


def decision_preconditions(message: str) -> bool:
    """A decision word, or a specific past event of the customer's, is in the message.

    What the "context" and "event" rules need; the classifier
    (``claims.agent.decision_model``) may only add a hit where this holds.
    """
    text = message.replace("\u2019", "'")
    return bool(_DECISION_CONTEXT.search(text) or _PAST_EVENT.search(text))


def decision_reason(message: str, *, vector: Any = None) -> str | None:
    """Why the message asks for a decision: a rule's name, "commit", "model", or None.

    ``vector``: the message's embedding (``decision_model.message_vector``);
    without it only the rules are asked.
    """
    if _COMMIT.search(message):
        return "commit"
    rule = decision_rule(message)
    if rule is not None:
        return rule
    if vector is not None:
        from claims.agent.decision_model import model_says_decision

        if model_says_decision(message, vector):
            return "model"
    return None


def asks_for_decision(message: str, *, vector: Any = None) -> bool:
    """Does the customer ask Northwind to decide, judge or commit on their own claim?"""
    return decision_reason(message, vector=vector) is not None
