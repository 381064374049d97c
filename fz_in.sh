` --hidden-size 4 )) \
 64 fi 1 [[ ]] { $A / pretrain_gpt.py B+=(--x 1) --seq-length ]] A=( 1 
 ; --micro-batch-size ) ${A[@]} -z #SBATCH --nodes=2 ` else 4 ${1:-2} else ` pretrain_gpt.py && ${A[@]} / torchrun \
 2 / fi } fi ${A:-x} ${A:-x} [