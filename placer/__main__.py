from placer.cli import main

main()
