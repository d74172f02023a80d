#!/usr/bin/env python3
# Trains ordo's position-scheme zoo: the entry point of the ordo_zoo package beside this file.
"""Run from the repository root:  python3 tools/zoo/train_zoo.py [--jobs 2] [--preset tiny --out DIR]
(`--help` describes the zoo and every option). The code is the package tools/zoo/ordo_zoo, one module
per job: settings, files, language and task data, the model, config, training, export, jobs, cli.
Python puts this file's directory first on the module path, so the package imports as it stands."""
from ordo_zoo.cli import main

if __name__ == "__main__":
    main()
