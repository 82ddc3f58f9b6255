rule export_tools:
    input:
        code=code("export_tools"),
    output:
        out("tools.json"),
        # environment.kind bfcl: BFCL's entries are the task suite (study.tasks names this file)
        **({"tasks": config["study"]["tasks"]} if BFCL else {}),
    params:
        environment=config["environment"],
    log:
        out("logs/export_tools.log"),
    resources:
        mem_mb=500,
        runtime=5,
    script:
        "../scripts/canaries/export_tools.py"


rule generate_canaries:
    input:
        tools=rules.export_tools.output[0],
        tasks=config["study"]["tasks"],
        code=code("generate_canaries"),
    output:
        out("canaries/{pool}.json"),
    params:
        fit=config["canaries"]["fit"],
        suffixes=pool_suffixes,
        control_suffixes=pool_control_suffixes,
        special_cases=config["canaries"]["special_cases"],
        variants=config["canaries"]["variants"],
        wording_seed=config["canaries"]["wording_seed"],
        dose=pool_dose,
        generator=config["canaries"]["generator"],
        llm=config["canaries"]["llm"],
    log:
        out("logs/generate_canaries/{pool}.log"),
    resources:
        mem_mb=1000,
        runtime=30,
    script:
        "../scripts/canaries/generate_canaries.py"
