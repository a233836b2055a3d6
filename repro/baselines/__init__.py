"""The methods the papers compare against (thresholding, PathSPCA, SPCA of Zou et al., GSPCA, SSPCA,
CE+SR, NMF wrappers). Each lives in its own module; the public names are re-exported here."""
