"""`python -m memwatch_overlay`: the command line."""
from memwatch_overlay.overlay.cli.main import main

if __name__ == "__main__":
    main(prog_name="memwatch-overlay")    # --version and usage lines name the command, not "python -m"
