from transcriber.cli import main

main()
