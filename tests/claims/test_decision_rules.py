"""Decision-request rules by name (`claims.agent.intents.decision_rule`): pure text, no DB."""

import pytest

from claims.agent.intents import asks_for_decision, decision_rule


@pytest.mark.parametrize(
    ("message", "rule"),
    [
        ("The adjuster says it's a total loss. Should I take their offer?", "claim_outcome"),
        ("Their insurer says it was half my fault. Do I have to agree?", "must_accept"),
        ("Is it on me? She pulled out of a driveway and I hit her.", "fault"),
        ("Can they put the crash on me when he ran the stop sign?", "fault"),
        ("Can you refuse to pay out because I left the window open?", "refuse_because"),
        ("Are you paying for the new fence or not?", "or_not"),
        ("A van clipped my wing mirror yesterday, do I have to pay my excess?", "pay_excess"),
        ("A branch fell on our carport last night. Who pays for the damage?", "who_pays"),
        ("The assessor said the deck rotted. Was that the right call?", "is_that_fair"),
        ("Did your assessor get it wrong about my roof?", "is_that_fair"),
        (
            "They paid for the bonnet but not the grille. Shouldn't they pay for both?",
            "should_they",
        ),
        ("My contents claim was turned down last week. Should I appeal?", "contest"),
        ("You declined the claim for my bike. Could I challenge that decision?", "contest"),
        ("Has the loss adjuster lowballed the value of our caravan?", "offer_too_low"),
        ("Why did you only offer half the value of my TV?", "offer_too_low"),
        ("How come you only paid me $2000 for my car?", "offer_too_low"),
        (
            "My Insurance Company Totaled My Car But Offered Too Little, What Can I Do?",
            "offer_too_low",
        ),
        ("Should I be paying the excess when the other guy hit me?", "pay_excess"),
        ("Can I ask for more than what the assessor valued my boat at?", "offer_too_low"),
        ("Is Northwind right to call it wear and tear?", "may_they"),
        ("Do you reckon my claim will go through?", "claim_outcome"),
        # an "if" that asks, not one that supposes
        ("Can you tell me if my claim for the stolen jewellery will go through?", "claim_outcome"),
        ("Do you know if my claim for the dent will be accepted?", "claim_outcome"),
        ("Will I lose my no-claims bonus for the crash on Friday?", "claim_outcome"),
        ("Is my no claims discount affected by this accident? It wasn't me.", "claim_outcome"),
        ("Is a 60/40 fault split fair when he ran the red light?", "fault"),
        ("Why is the insurer only offering me $900 for the bike?", "may_they"),
        (
            "How can I get my insurer to replace the sofa instead of cleaning it?",
            "held_responsible",
        ),
        ("Does my insurance have to pay for the fence that was hit by the truck?", "have_to"),
        ("They reckon the garage fire was deliberate. Can they refuse to pay me?", "refuse_me"),
        (
            "Is the insurer responsible for my towing bill after the crash on Friday?",
            "responsible_event",
        ),
        ("The assessor says the crack was old. How do I prove him wrong?", "contest"),
        (
            "The insurance company says my car is not a total loss but it should be. What now?",
            "decision_fair",
        ),
    ],
)
def test_a_judgement_on_ones_own_claim_names_its_rule(message, rule):
    assert decision_rule(message) == rule


@pytest.mark.parametrize(
    "message",
    [
        "Should I pay the excess to the repairer or to you?",
        "Do I have to pay my deductible if I hit a deer?",
        "Can an insurer refuse to pay if the policy lapsed?",
        "When do I have to pay the excess?",
        "Will you pay for the hire car if mine is off the road after a crash?",
        "Who do I talk to if I don't agree with the assessor?",
        "How do I dispute a claim decision?",
        "Can you appeal a declined claim?",
        "Why do insurers lowball settlements?",
        "Does a write-off pay more than market value?",
        "How does the no-claims bonus work?",
        "Do I lose my no-claims bonus if I make a claim?",
        "Does home insurance have to pay for a tree that falls in a storm?",
        "Can I get a rental car while mine is repaired?",
        "How is fault split when both drivers changed lanes?",
        "Should I accept the first offer an insurer makes?",
        "Do insurers usually offer too little for a write-off?",
        "Is the insurer responsible for towing after a crash?",
        "If my claim is approved, when is it paid?",
        "Why does insurance only pay market value?",
        "Should I pay the excess if the other driver hits me?",
        "My mechanic says the car is fine but is it covered for a service?",
    ],
)
def test_a_general_question_is_not_a_decision_request(message):
    assert not asks_for_decision(message), decision_rule(message)
