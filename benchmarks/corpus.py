"""A reproducible corpus of short, realistic sentences for search benchmarks.

Facts an assistant would keep ("the customer prefers invoices by email on Fridays"): a few
hundred common English words drawn with Zipf frequencies, so queries share common words
("the", "for", "with") with many entries and rare words with few.
"""

from __future__ import annotations

import random

WORDS = """
the customer prefers invoices email fridays order shipped warehouse berlin account manager
named anna support ticket about broken laptop screen replaced warranty policy covers
accidental damage years subscription renews every january discount gold tier percent loyalty
points expire after months delivery address changed office street building floor meeting room
booked tuesday morning project deadline moved next quarter budget approved marketing campaign
launch spring product feedback positive battery life camera quality price too high compared
competitor offer free shipping orders above euros language french german spanish italian
english timezone central european summer time phone number updated recently password reset
requested twice security question favourite colour blue green allergic peanuts vegetarian
dinner reservation restaurant downtown table four people birthday party daughter turns seven
saturday afternoon flight lisbon departs gate terminal seat window aisle hotel room sea view
breakfast included checkout noon rental car compact automatic insurance included mileage
unlimited doctor appointment dentist cleaning thursday prescription refill pharmacy closes gym
membership yoga classes evening swimming pool sauna weekend hiking trail mountain lake camping
tent sleeping bag rain jacket boots size book club novel reading chapter author interview
podcast episode recorded studio guitar lessons piano practice daily minutes cooking recipe
pasta tomato sauce garlic basil oven degrees wine red white sparkling coffee espresso milk oat
sugar none tea green herbal water sparkling still plant watering twice week garden roses
tomatoes cat named luna dog walks park neighbour keys spare apartment rent due first month
landlord heating repair plumber called invoice paid bank transfer card expired new card
arrives tracking number parcel locker code pickup before evening and for with that this from
have will are was not but they you all can her his one our out day get has him how its may new
now old see two who boy did she use way many then them these some would other into more time
very when come could make like back only over think also after work first well even want
because any give most
""".split()  # noqa: SIM905


def sentences(count: int, seed: int = 7, low: int = 6, high: int = 14) -> list[str]:
    """``count`` sentences of ``low``..``high`` words, Zipf-weighted, reproducible."""
    rng = random.Random(seed)
    weights = [1.0 / (rank + 1) for rank in range(len(WORDS))]
    shuffled = WORDS[:]
    rng.shuffle(shuffled)
    return [
        " ".join(rng.choices(shuffled, weights, k=rng.randint(low, high))).capitalize()
        for _ in range(count)
    ]


def queries(count: int, seed: int = 11) -> list[str]:
    """User messages of 6..10 words from the same distribution, ending in a question mark."""
    return [s + "?" for s in sentences(count, seed, 6, 10)]
