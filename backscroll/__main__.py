from backscroll.cli import console

console()
