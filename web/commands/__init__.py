"""One module per ``kclab`` subcommand, each exposing ``register(subparsers)``.

``register`` adds its parser and sets ``func`` (called with the parsed arguments, returning the
exit code); ``web.cli.COMMAND_MODULES`` lists the modules to load.
"""
