
	seq_empôy&