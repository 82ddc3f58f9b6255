"""The report, the last stage: the page, the trace viewer and the figures (templates in ``canarykit/resources``).

- :mod:`.report`     the HTML report
- :mod:`.traceview`  the trace viewer of one run
- :mod:`.figures`    Altair figures
"""
