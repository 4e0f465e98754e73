"""spark-submit entry point for ``kquotactl recommend`` (the same command, with the master left to spark-submit).

    make impact-zip      # dist/kquotactl.zip: the package, for --py-files
    spark-submit --master spark://host:7077 --py-files dist/kquotactl.zip scripts/recommend_job.py \\
        s3a://bucket/traffic/ --current quotas.yaml -o json > recommendation.json

Arguments are those of ``kquotactl recommend`` (``--engine spark --master submit`` are added); the cluster's
connection options (``--bootstrap-server``, ``--zookeeper``, ``--command-config``, ``--context``) and ``-o`` may be
given among them. The driver imports kquotactl from the zip and needs click, rich and PyYAML installed where
spark-submit runs; the executors import it from the zip for the per-quota-id replay (with pandas and pyarrow).
"""

import sys

from kquotactl.cli.app import main

#: options of the ``kquotactl`` group (each with a value): they go before the sub-command
GROUP_OPTIONS = ("-o", "--output", "--bootstrap-server", "--zookeeper", "--command-config", "--context")

if __name__ == "__main__":
    args = sys.argv[1:]
    head: list[str] = []
    for opt in GROUP_OPTIONS:
        while opt in args:
            i = args.index(opt)
            head += args[i : i + 2]
            del args[i : i + 2]
    main([*head, "recommend", *args, "--engine", "spark", "--master", "submit"])
