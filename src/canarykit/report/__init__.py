"""The report, the last stage: the page, the trace viewer and the figures (templates in ``canarykit/resources``).

- :mod:`.report`     the HTML report
- :mod:`.firstscreen` its first screen: findings per model, what the instrument recovered
- :mod:`.diagnosis`  the diagnosis per model in words
- :mod:`.text`       numbers as text, JSON safe in a script (the page's and the figures')
- :mod:`.traceview`  the trace viewer of one run
- :mod:`.figures`    Altair figures
"""
