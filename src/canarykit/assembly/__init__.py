"""Assembly, the stage after the canaries: the tool list each (condition, seed, task, arm) offers.

- :mod:`.assembly`  the offered tool lists and their order
- :mod:`.dose`      the dose profile: tool lists with a growing number of canaries
"""
