from backscroll.cli import main

main()
