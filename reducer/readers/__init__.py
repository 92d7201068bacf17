"""The forms users run code in, each read into the program a job reduces: a script or a notebook
(`inputs`, `notebook`), a test's node id made a standalone script (`testcase`, with `testtarget`,
`testfixtures`, `testparams` and `testclass`), and the user's own packages inlined into it
(`user_code`, `user_modules`, `global_names`). `reducer.entry.job_for` is the one way in: it asks
these readers (or, for a module, the IR level's own) and hands the job the program.
"""
