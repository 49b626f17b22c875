from searchapp.cli import main

main()
