"""Optional cover sections a policy schedule can list, per line.

The knowledge base owns this vocabulary. A clause whose metadata carries
``Schedule section: <code>`` applies only when the policy schedule lists that
code in its ``coverage_sections``; its text says so with the words
"only if your schedule lists". Codes are only ever added, never renamed or
reused for another cover (schedules and stored answers depend on them).
"""

COVERAGE_SECTIONS: dict[str, dict[str, str]] = {
    "motor": {
        "alternative_transport": "Alternative transport (hire car) after an accepted claim",
        "excess_free_glass": "No excess for windscreen and window glass claims",
    },
    "home": {
        "glass_sanitary_excess_free": (
            "No excess for broken glass and sanitary fixtures in your home"
        ),
        "landlord": "Landlord cover: loss of rent and damage by tenants for a home you rent out",
    },
    "contents": {
        "specified_items": (
            "Specified items: valuables listed in your schedule, covered anywhere in the world"
        ),
        "portable_items_overseas": "Portable items you take with you when travelling overseas",
    },
}
