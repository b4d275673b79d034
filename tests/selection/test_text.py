"""Words, clause bodies and clause ids written in a message."""

import pytest

from claims.agent.selection.baseline import baseline_terms
from claims.agent.text import clause_body, ids_in_message

IDS = ("MTR-COV-01", "MTR-COV-02", "MTR-BEN-03", "MTR-XS-01")


@pytest.mark.parametrize(
    "message, expected",
    [
        ("what does MTR-BEN-03 say about fuel", ["MTR-BEN-03"]),
        ("mtr ben 3 please", ["MTR-BEN-03"]),
        ("MTR_BEN_03?", ["MTR-BEN-03"]),
        ("clause BEN-03 of the motor policy", ["MTR-BEN-03"]),
        ("clause ben 3", ["MTR-BEN-03"]),
        ("compare MTR-COV-02 and mtr-cov-1", ["MTR-COV-02", "MTR-COV-01"]),
        ("clause 3 of the motor policy", ["MTR-BEN-03"]),
        ("my mate ben 3 doors down", []),
        ("what about HOM-COV-01", []),
        ("MTR-BEN-99", []),
    ],
)
def test_clause_ids_written_in_a_message_are_found(message, expected):
    assert ids_in_message(message, IDS) == expected


def test_clause_body_drops_heading_and_metadata():
    text = "## MTR-BEN-03 - Hire car\nKind: benefit\nVisibility: customer\n\nBody line.\n- a"
    assert clause_body(text) == "Body line.\n- a"


def test_baseline_terms_follow_the_seed_example():
    # seed 000, P2: only these five words survive the filter
    message = "Will my policy pay for a rental car while mine is repaired?"
    assert baseline_terms(message) == ["will", "pay", "rental", "mine", "repaired"]
    assert baseline_terms("Is my car covered?") == ["covered"]


@pytest.mark.parametrize(
    ("message", "wording_words"),
    [
        ("Does car insurance cover arson?", {"fire"}),
        ("Is riot damage to my house covered?", {"vandal", "malici"}),
        ("What does bodily injury cover pay for?", {"injuri", "third", "liabil"}),
        ("Is my girlfriend covered to drive my car?", {"famili", "member"}),
        ("Does my car insurance cover my son?", {"famili", "member"}),
        ("Am I covered driving a U-Haul?", {"hire", "van", "truck"}),
        ("Is central air covered by home insurance?", {"applianc", "breakdown"}),
        ("Will you pay for the other driver's car?", {"third", "parti"}),
        ("I backed into his ute, who fixes it?", {"third", "parti"}),
        ("Does Car Insurance Cover Tire Blowouts?", {"tyre", "burst"}),
        ("Will insurance pay if I was driving under the influence?", {"alcohol", "drug"}),
        ("Can insurance refuse to pay if I lied about the accident?", {"fals"}),
        ("Can I claim for the days I could not work while my car was fixed?", {"incom"}),
        ("Does Insurance Pay If I Crash While High?", {"alcohol", "drug"}),
        ("i dinged someone's car in the supermarket carpark, what now?", {"third", "parti"}),
        ("we're going overseas for 3 months, does the house stay insured", {"unoccupi"}),
        ("Will my car insurance cover me if I drive to another state?", {"zealand", "oversea"}),
        ("Does Auto Insurance Pay For A New Transmission?", {"mechan", "breakdown"}),
        ("My Apartment Flooded Where Do I Stay?", {"temporari", "accommod"}),
        ("Am I Covered If My License Is Expired?", {"licenc"}),
        ("Does Car Insurance Cover Intentional Damage?", {"purpos"}),
        ("Does Renters Insurance Cover Stolen Cash?", {"valuabl", "limit"}),
        ("the money was taken from my bedside drawer", {"valuabl", "limit"}),
        ("Possums got into the roof and chewed the wiring", {"anim", "pest"}),
        ("I swerved to miss a possum and hit the barrier", {"anim", "collis"}),
        ("My laptop fell off the table and the screen cracked", {"accident", "damag"}),
        ("it's off the road for three weeks and I need a car to get to work", {"hire", "altern"}),
        ("the paint doesn't match and there's a rattle in the door", {"workmanship", "guarante"}),
        ("the car's worth $3000 less now it has a crash history", {"valu"}),
        ("catalytic converter got cut off my car overnight", {"theft"}),
        ("we're adding a second storey next year", {"build", "alter"}),
    ],
)
def test_us_and_everyday_terms_get_the_wordings_words(message, wording_words):
    from claims.agent import text as T

    assert wording_words <= T.terms(message, customer=True)
    assert not wording_words <= T.terms(message)  # the wording is read in its own words


@pytest.mark.parametrize(
    ("message", "not_added"),
    [
        ("the neighbour's tree fell over in the storm", "accidental damage"),
        ("do I need a car seat for a two year old?", "hire car alternative transport"),
        ("Do I need car insurance?", "hire car alternative transport"),
        ("what plants keep possums away from the garden?", "animal accident collision"),
    ],
)
def test_the_glossary_reads_a_word_in_its_sense(message, not_added):
    from claims.agent import text as T

    assert not_added not in T.glossary_terms(message)


def test_the_customers_own_other_car_is_not_a_third_party():
    from claims.agent import text as T

    assert "third" in T.terms("Who fixes the other car?", customer=True)
    assert "third" not in T.terms("Is my other car covered too?", customer=True)


def test_a_customers_name_for_us_and_how_it_works_are_not_content():
    from claims.agent import text as T

    assert "compani" not in T.terms("Can my insurance company total my car?", customer=True)
    assert "compani" in T.terms("Is the removal company's damage covered?", customer=True)
    assert "work" not in T.terms("How do claims work?", customer=True)
    assert "work" in T.terms("Is building work covered?", customer=True)


@pytest.mark.parametrize(
    "message, expected",
    [
        (
            "Do I Need To Tell My Insurance Company About A New Driver?",
            "Do I Need To Tell you About A New Driver?",
        ),
        ("Must I tell my car insurer if I move?", "Must I tell you if I move?"),
        ("Can my renters insurance provider drop me?", "Can you drop me?"),
        # another insurer stays named: not us
        ("Can I sue my life insurance company?", "Can I sue my life insurance company?"),
        ("Will the other driver's insurer pay?", "Will the other driver's insurer pay?"),
        # a kind of car is the car the schedule names
        ("My ute got pranged, am I covered?", "My car got pranged, am I covered?"),
        ("Branch fell on our SUV", "Branch fell on our car"),
        ("Is the roof hatch covered?", "Is the roof hatch covered?"),
    ],
)
def test_the_customers_name_for_us_is_read_as_you(message, expected):
    from claims.agent import text as T

    assert T.rewrite(message) == expected
    assert T.expand(message).startswith(expected)


@pytest.mark.parametrize(
    "message, line, expected",
    [
        # what is inside the car, not the car insurance
        ("Are things in my car covered by auto insurance?", "motor", None),
        ("What is covered in my car insurance?", "motor", "cover"),
        ("What's covered in my home?", "home", "cover"),
        ("What does my car insurance cover?", "motor", "cover"),
        ("What Is Full Coverage Auto Insurance?", "motor", "cover"),
        ("what's covered", "contents", "cover"),
        ("What does homeowners insurance protect against?", "home", "cover"),
        ("What can I claim on my renters insurance?", "contents", "cover"),
        ("What does my car insurance not cover?", "motor", "exclusion"),
        ("What are the exclusions?", "home", "exclusion"),
        ("What isn't covered by renters insurance?", "contents", "exclusion"),
        # another line's noun, a thing named, no asking word, no line
        ("Does renters insurance cover auto?", "contents", None),
        ("What does renters insurance cover?", "motor", None),
        ("Does renters insurance cover my roommate?", "contents", None),
        ("Why isn't my roof covered?", "home", None),
        ("How much car insurance do I need?", "motor", None),
        ("What is my car insurance?", "motor", None),
        ("Can I claim?", "motor", None),
        ("What is a car insurance claim?", "motor", None),
        ("What does my policy cover?", "", None),
        # how to claim, in words for claiming only
        ("How do I make a claim?", "home", "claims"),
        ("How do I lodge a claim?", "contents", "claims"),
        ("When To File A Claim For Auto Insurance?", "motor", "claims"),
        ("What is the claims process?", "motor", "claims"),
        ("How long does a claim take?", "motor", None),
        ("How do I claim life insurance?", "motor", None),
        ("How To Dispute A Homeowners Insurance Claim?", "home", None),
    ],
)
def test_a_question_about_the_whole_policy(message, line, expected):
    from claims.agent.text import whole_policy_question

    assert whole_policy_question(message, line) == expected


@pytest.mark.parametrize(
    "message, expected",
    [
        ("Does my car insurance cover vet bills?", True),
        ("What does gap auto insurance cover?", True),
        ("What should I do if my claim is denied?", True),
        ("How long does a claim stay on my record?", True),
        ("What is a normal deductible for renters insurance?", True),
        ("How much does car insurance rise after a claim?", True),
        ("What Is Term Insurance?", True),
        ("How Much Does It Cost To Replace A Roof?", True),
        ("How do I get rid of mice in my flat?", True),
        ("Is it legal to drive with a cracked tail light in NZ?", True),
        ("Do I need a building consent to put in a new deck?", True),
        ("Is Renters Insurance Required By Landlords?", True),
        ("Can my landlord require renters insurance?", True),
        ("Is car insurance mandatory in NZ?", True),
        ("How Much Is Renters Insurance A Month?", True),
        ("How Much Is Renters Insurance?", True),  # the question mark ends the price
        ("how much is home insurance", True),
        ("How Long Does An Accident Stay On Your Insurance?", True),
        ("What Is The Difference Between Renters And Homeowners Insurance?", True),
        ("Do Students Need Renters Insurance?", True),
        ("Can I Transfer My Car Insurance To A New Car?", True),
        ("Can I Have Two Renters Insurance Policies?", True),
        ("I have two cars on one policy, is there one excess if both are hit?", False),
        ("can you tell me what ACC pays if I was hurt in a crash", True),
        ("what does the Tenancy Tribunal do about unpaid rent", True),
        ("how do I apply for a building consent for a deck", True),
        ("Does the policy pay for injuries ACC does not cover?", False),
        ("The Tenancy Tribunal says I owe for the carpet I damaged, will you pay?", False),
        ("Do I need to tell you if I buy a new car?", False),
        ("Do I Need Renters Insurance If My Landlord Has Insurance?", True),
        ("Do I need insurance company approval for repairs?", False),
        ("How Do I Get Proof Of Renters Insurance?", True),
        ("How much does home insurance cost in Auckland?", True),
        ("Is Renters Insurance Worth It?", True),
        ("Is it worth getting contents insurance when I rent?", True),
        ("Is comprehensive car cover really worth the money?", True),
        # paying the premium, a US form's lettered parts, losing one's job
        ("Can I Pay My Homeowners Insurance Through Escrow?", True),
        ("Can I pay for my car insurance monthly by credit card?", True),
        ("What Is Dwelling Coverage A?", True),
        ("What does coverage B mean on my home policy?", True),
        ("Will Renters Insurance Pay My Rent If I Lose My Job?", True),
        ("Does my insurance pay the mortgage if I am made redundant?", True),
        ("Does Renters Insurance Cover Identity Theft?", True),
        ("Does Renters Insurance Cover Pet Injuries?", True),
        ("What Is Loss Assessment Coverage On Renters Insurance?", True),
        ("What Is The Difference Between HO3 And HO5?", True),
        ("Why Is My Car Insurance So High When I Have A Clean Record?", True),
        ("How Much Does A DUI Raise Your Car Insurance?", True),
        ("Can I Put My Car Insurance On Hold While I Am Deployed?", True),
        ("My Landlord Says I Have To Have Renters Insurance Is That Legal?", True),
        ("Does Credit Affect Auto Insurance?", True),
        ("Does the colour of my car affect my rates?", True),
        ("What Is The Difference Between Collision And Liability Only?", True),
        ("What Happens If I Drive Without Insurance And Get Pulled Over?", True),
        ("How Do I Find Out Who Insures A Car?", True),
        ("Can I insure a car in my brother's name?", True),
        ("What Is Stacked Uninsured Motorist Coverage?", True),
        ("Does Car Insurance Cost More In The City?", True),
        ("How Much Is Homeowners Insurance On A Mobile Home?", True),
        ("Is Homeowners Insurance Included In My Mortgage Payment?", True),
        ("Is Renters Insurance Different From Homeowners Insurance?", True),
        ("how much is it to add my partner as a driver", True),
        ("what does a builders report cost before buying a house", True),
        # the same words about the customer's own policy or event
        ("Rising floodwater came into the garage, am I covered?", False),
        ("What is the highest excess I could pay?", False),
        ("How do I make a claim?", False),
        ("Is my claim covered if the claim form is late?", False),
        ("Is my investment property covered for damage by tenants?", False),
        ("Can my claim get denied for reporting it late?", False),
        ("Is long-term care insurance tax deductible?", False),
        ("How much does it cost me to replace my windscreen under my policy?", False),
        ("How do I get rid of my old policy and start a new one?", False),
        ("Do I need to tell you if I get a building consent?", False),
        ("How much is my car insurance excess?", False),
        ("How much will my insurance pay for a hire car?", False),
        ("How much is my house insured for?", False),
        (
            "Do I legally have to have working smoke alarms for the home insurance to stay valid?",
            False,
        ),
        ("Does my bank require me to tell you about the mortgage?", False),
        ("Is my insured car worth less after the repair?", False),
        ("Is it worth repairing my car or will you write it off?", False),
        ("What happens if I don't pay my premium?", False),
        ("Can I pay my excess by card?", False),
        ("Is there coverage a year after I move out?", False),
        ("My dog injured the neighbour's kid, am I covered?", False),
        ("Someone stole my wallet and my ID, is that covered?", False),
        ("Why Is My Car Insurance Deductible So High?", False),
        ("Can I increase my insurance cover for the new TV?", False),
        ("Am I covered if my licence was suspended?", False),
        ("An uninsured driver hit me, do I pay the excess?", False),
        ("Do modifications affect my cover?", False),
        ("Can I insure my car for its agreed value?", False),
        ("What's the difference between agreed value and market value?", False),
        ("Are fitted carpets under home or contents insurance?", False),
        ("Will my excess be higher if my son drives?", False),
        ("Will insurance pay my mortgage payments while the house is rebuilt?", False),
        ("I lost my income for two weeks while my car was repaired, can I claim?", False),
        ("Is damage from firewood stacked against the house covered?", False),
        ("If the pipes freeze will the cover pay?", False),
        ("Who insures the hire car you give me?", False),
        ("I lost my job, can I cancel my contents policy and get a refund?", False),
    ],
)
def test_a_topic_no_clause_answers(message, expected):
    from claims.agent.text import clearly_outside

    assert clearly_outside(message) is expected


@pytest.mark.parametrize(
    "message, expected",
    [
        ("Someone broke in and took the TV, what do I do to claim?", True),
        ("The flat was burgled, how do I make a claim?", True),
        ("How To Claim On Renters Insurance?", True),
        ("What can I claim on my renters insurance?", False),
        ("Can I claim for my glasses?", False),
        ("How long does a claim take?", False),
    ],
)
def test_asks_how_to_claim(message, expected):
    from claims.agent.text import asks_how_to_claim

    assert asks_how_to_claim(message) is expected


def test_expensive_prices_insurance_not_a_valuable():
    from claims.agent.text import OUTSIDE_SIGNS, outside_signs

    price = list(OUTSIDE_SIGNS).index("price_advice")
    assert outside_signs("Why is car insurance so expensive?")[price] == 1.0
    assert outside_signs("How do I add expensive jewelry to my renters policy?")[price] == 0.0


def test_a_repair_quote_is_not_a_price_and_whether_to_claim_is_advice():
    from claims.agent.text import OUTSIDE_SIGNS, outside_signs

    price = list(OUTSIDE_SIGNS).index("price_advice")
    assert outside_signs("Can I get my own quote for car repairs?")[price] == 0.0
    assert outside_signs("Can I get a quote for car insurance?")[price] == 1.0
    assert outside_signs("Is it worth claiming a small accident?")[price] == 1.0
    assert outside_signs("Do I need full coverage?")[price] == 1.0
    assert outside_signs("Do I need to tell my insurance company about a new driver?")[price] == 0.0
    # the body shop is the repairer, not shopping for insurance
    assert outside_signs("Can I Choose My Own Body Shop For Repairs?")[price] == 0.0
    assert outside_signs("When shopping for renters cover, what matters?")[price] == 1.0


@pytest.mark.parametrize(
    "message, other_domain",
    [
        ("What Is Key Person Insurance?", True),
        ("Is insurance money taxable?", True),
        ("What does underwritten mean?", True),
        ("What is a rider on a policy?", True),
        ("What Is Cash Value?", True),
        ("Is renters insurance actual cash value or replacement cost?", False),
        ("My registration lapsed, am I covered?", False),
        ("Is smoke damage covered?", False),
    ],
)
def test_terms_of_other_kinds_of_insurance(message, other_domain):
    from claims.agent.text import OUTSIDE_SIGNS, outside_signs

    assert outside_signs(message)[list(OUTSIDE_SIGNS).index("other_domain")] == float(other_domain)


def test_the_price_paid_for_an_item_is_not_a_price_question():
    from claims.agent.text import OUTSIDE_SIGNS, outside_signs

    price = list(OUTSIDE_SIGNS).index("price_advice")
    assert outside_signs("Will I get the full price I paid for my stolen TV?")[price] == 0.0
    assert outside_signs("What is the price of car insurance?")[price] == 1.0


@pytest.mark.parametrize(
    "message, sign",
    [
        ("Should I lower my deductible?", "price_advice"),
        ("How much is a deductible usually?", "price_advice"),
        ("Does my credit score affect my car insurance?", "price_advice"),
        ("What is rental reimbursement coverage and do I need it?", "price_advice"),
        ("What is non owner car insurance?", "us_only"),
        ("Does car insurance cover car payments if I lose my job?", "other_domain"),
    ],
)
def test_advice_us_products_and_income_are_outside_signs(message, sign):
    from claims.agent.text import OUTSIDE_SIGNS, outside_signs

    assert outside_signs(message)[list(OUTSIDE_SIGNS).index(sign)] == 1.0


def test_a_question_about_changing_the_locks_is_no_advice():
    from claims.agent.text import outside_signs

    assert not any(outside_signs("Should I change my locks after losing my keys?"))


def test_cash_paid_out_is_not_stolen_cash():
    from claims.agent import text as T

    assert not {"valuabl", "limit"} <= T.terms(
        "Will you pay me cash instead of a new TV?", customer=True
    )
