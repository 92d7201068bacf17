"""Where candidates run: scratch folders and limits (`sandbox`), warm fork-server workers
(`forkserver`) and their long-lived runners (`runner`)."""
