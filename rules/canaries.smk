rule export_tools:
    input:
        code=package_code("tools"),
    output:
        "results/tools.json",
    params:
        environment=config["environment"],
    log:
        "results/logs/export_tools.log",
    script:
        "../scripts/export_tools.py"


rule generate_canaries:
    input:
        tools=rules.export_tools.output[0],
        tasks=config["study"]["tasks"],
        code=package_code("canaries", "tasks.py"),
    output:
        "results/canaries/{pool}.json",
    params:
        fit=config["canaries"]["fit"],
        suffixes=pool_suffixes,
        control_suffixes=pool_control_suffixes,
        special_cases=config["canaries"]["special_cases"],
        generator=config["canaries"]["generator"],
        llm=config["canaries"]["llm"],
    log:
        "results/logs/generate_canaries/{pool}.log",
    script:
        "../scripts/generate_canaries.py"
