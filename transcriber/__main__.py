from transcriber.cli.commands import main

main()
