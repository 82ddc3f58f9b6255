rule export_tools:
    input:
        code=package_code("tools"),
    output:
        "results/tools.json",
    log:
        "results/logs/export_tools.log",
    script:
        "../scripts/export_tools.py"


rule generate_canaries:
    input:
        tools="results/tools.json",
        code=package_code("canaries"),
    output:
        "results/canaries/{pool}.json",
    params:
        suffixes=pool_suffixes,
        special_cases=config["canaries"]["special_cases"],
        generator=config["canaries"]["generator"],
        llm=config["canaries"]["llm"],
    log:
        "results/logs/generate_canaries/{pool}.log",
    script:
        "../scripts/generate_canaries.py"
