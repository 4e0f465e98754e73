"""spark-submit entry point for ``kquotactl impact run`` (the same command, with the master left to spark-submit).

    make impact-zip      # dist/kquotactl.zip: the package, for --py-files
    spark-submit --master spark://host:7077 --py-files dist/kquotactl.zip scripts/impact_job.py \\
        s3a://bucket/traffic/ -f quotas.yaml -o json > report.json

Arguments are those of ``kquotactl impact run`` (``--engine spark --master submit`` are added). The plan has no
Python UDFs, so executors never import kquotactl; only the driver does (from the zip), and it needs click, rich
and PyYAML installed where spark-submit runs.
"""

import sys

from kquotactl.cli.app import main

if __name__ == "__main__":
    args = sys.argv[1:]
    group = [a for a in ("-o", "--output") if a in args]
    head: list[str] = []
    for opt in group:  # group options go before the sub-command
        i = args.index(opt)
        head += args[i : i + 2]
        del args[i : i + 2]
    main([*head, "impact", "run", *args, "--engine", "spark", "--master", "submit"])
